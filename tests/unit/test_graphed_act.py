"""`--cuda_graphs`' data path, checked on the CPU (`surge.sampling.graphed_act`): the rows of a pass
gathered into static buffers and padded up to a bucket, the outputs packed into one byte tensor and
unpacked, the normalisers' derived statistics kept at their addresses. On the CPU the same path
runs without capture; the capture itself is checked on a GPU (tests/integration/test_cuda.py)."""

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.learning.algorithm import ActContext
from surge.models.normalization import RunningMeanStd
from surge.runtime.components import build_components
from surge.runtime.shared_state import SharedWeights
from surge.sampling.graphed_act import MIN_BUCKET, OutputLayout, bucket_rows
from surge.sampling.inference_loop import InferenceLoop
from tests.inference_twin import twin


def test_a_pass_takes_the_smallest_power_of_two_bucket_from_8_rows_capped_at_the_most():
    for max_rows in (1, 8, 12, 64, 100):
        for n in range(1, max_rows + 1):
            naive = next(b for b in (MIN_BUCKET * 2**k for k in range(20)) if b >= n)
            assert bucket_rows(n, max_rows) == min(naive, max_rows), (n, max_rows)
    for n, max_rows in ((0, 8), (9, 8)):
        with pytest.raises(ValueError, match="rows"):
            bucket_rows(n, max_rows)


def test_packed_outputs_unpack_to_the_fields_they_were_with_each_field_aligned():
    g = torch.Generator().manual_seed(0)
    b = 11
    outputs = {
        "actions": torch.randint(0, 7, (b,), dtype=torch.int64, generator=g),
        "values": torch.randn(b, generator=g),
        "logits": torch.randn(b, 5, generator=g),
        "rnn_states": torch.randn(b, 0),
        "image": torch.randint(0, 255, (b, 3, 2), dtype=torch.uint8, generator=g),
        "done": torch.rand(b, generator=g) > 0.5,
        "half": torch.randn(b, 3, generator=g).to(torch.float16),
        "wide": torch.randn(b, 2, generator=g, dtype=torch.float64),
    }
    layout = OutputLayout(outputs)
    assert layout.width % 8 == 0
    for f in layout.fields:
        assert f.offset % torch.empty(0, dtype=f.dtype).element_size() == 0, f
    packed = layout.pack(outputs)
    assert packed.dtype == torch.uint8 and packed.shape == (b, layout.width)
    for n in (b, 4):  # all rows, and the first rows of a larger pass (a padded bucket)
        back = layout.unpack(packed[:n].clone())
        assert set(back) == set(outputs)
        for name, value in outputs.items():
            assert back[name].dtype == value.dtype and torch.equal(back[name], value[:n]), name


def _components(env: str, rnn: bool, core: str = "gru"):
    flags = [f"--env={env}", "--num_workers=1", "--num_envs_per_worker=16", "--worker_num_splits=2"]
    flags += ["--rollout=4", "--recurrence=4" if rnn else "--recurrence=1", "--batch_size=32", "--seed=3"]
    flags += [f"--use_rnn={rnn}", f"--rnn_type={core}", "--normalize_input=True", "--mixed_precision=none"]
    return build_components(parse_cfg(flags))


def _snapshot(buf):
    return {n: getattr(buf, n).clone() for n in buf.FIELDS if isinstance(getattr(buf, n), torch.Tensor)}


def _restore(buf, snap):
    for name, value in snap.items():
        getattr(buf, name).copy_(value)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal (floats within 1e-6: a matrix product over rows at another address may round
    otherwise), NaN where the other is NaN (the buffers' unwritten rows)."""
    if not a.is_floating_point():
        return torch.equal(a, b)
    return bool((torch.isclose(a, b, rtol=1e-6, atol=1e-6) | (a.isnan() & b.isnan())).all())


#: what a pass writes that does not depend on the sampled actions
_DETERMINISTIC = ("values", "action_logits", "rnn_states", "policy_version")


@pytest.mark.parametrize("env,rnn,core", [("CartPole-v1", False, "gru"), ("memory_cue", True, "lstm")])
def test_the_static_path_writes_what_the_eager_path_writes(env, rnn, core):
    """Requests of a bucket's size (8 rows, 16 rows) draw the same random numbers as the eager
    pass, so everything written is equal; a request of 3 rows (a bucket of 8, padded with what an
    earlier pass left) writes the same deterministic fields, and actions whose log-probs are the
    logits' own."""
    c = _components(env, rnn, core)
    worker, buf, eager = c.workers[0], c.layout.buffers, c.inferences[0]
    static = twin(eager, cuda_graphs=True)
    assert static._graphed is not None and not static._graphed.capture
    worker.reset()
    eager.policy_version = static.policy_version = 4
    eager._np = eager._views = None  # the tensor path (gathers, index writes): the reference
    for step in range(3):
        requests = [(worker.splits[s].index, worker.policy_request(s)[1]) for s in range(2)]
        first = requests[0][0]
        three = (torch.arange(first.start, first.start + 3), requests[0][1])
        for batch, exact in (([requests[0]], True), (requests, True), ([three], False)):
            before = _snapshot(buf)
            torch.manual_seed(50 + step)
            eager.infer(batch)
            by_eager = _snapshot(buf)
            _restore(buf, before)
            torch.manual_seed(50 + step)
            static.infer(batch)
            by_static = _snapshot(buf)
            names = by_eager if exact else _DETERMINISTIC
            for name in names:
                assert _same(by_static[name], by_eager[name]), (name, len(batch), step)
            slots, t = batch[0]
            logits, actions = buf.action_logits[slots, t], buf.actions[slots, t]
            expected = torch.log_softmax(logits, -1).gather(-1, actions.long().view(len(logits), 1))
            assert torch.allclose(buf.behavior_log_probs[slots, t], expected.view(-1), atol=1e-6)
        for s in range(2):
            worker.advance(s)


def test_new_weights_and_statistics_are_read_at_the_addresses_a_graph_reads():
    """A captured graph reads the model's tensors and the normaliser's derived statistics where
    they were at capture: loading a learner's new weights (the async placement's
    `SharedWeights.load_into`) must keep every address, and the static path must then act with
    the new weights and statistics, as a fresh eager pass does."""
    c = _components("CartPole-v1", False)
    inference = c.inferences[0]
    static = twin(inference, cuda_graphs=True)
    graphed = static._graphed
    norm = next(m for m in inference.model.modules() if isinstance(m, RunningMeanStd))
    assert norm.derive_in_place
    rows = torch.arange(0, 8)
    c.layout.buffers.obs[rows, 0] = torch.randn(8, 4) + 2
    graphed(rows, 0)  # the first pass: buffers allocated, statistics derived
    tensors = {
        n: t.data_ptr() for n, t in [*inference.model.named_parameters(), *inference.model.named_buffers()]
    }
    derived = [t.data_ptr() for t in norm.derived()]

    learner = _components("CartPole-v1", False).models[0]  # other weights
    lnorm = next(m for m in learner.modules() if isinstance(m, RunningMeanStd))
    lnorm.update(torch.randn(64, 4) * 3 + 2)  # other statistics
    weights = SharedWeights(learner)
    weights.publish(learner, 9)
    assert weights.load_into(inference.model) == 9
    after = {
        n: t.data_ptr() for n, t in [*inference.model.named_parameters(), *inference.model.named_buffers()]
    }
    assert after == tensors
    out = graphed(rows, 0)
    assert [t.data_ptr() for t in norm.derived()] == derived
    assert torch.allclose(norm.mean, lnorm.mean, atol=1e-5)  # (shared weights travel as float32)
    assert norm.mean.abs().min() > 0.5  # new statistics, not the prior's zeros
    obs = c.layout.buffers.obs[rows, 0]
    fresh = inference.act(learner, obs, torch.empty(8, 0), ActContext(deterministic=True))
    assert out["values"].isfinite().all()
    assert torch.allclose(out["values"], fresh["values"], atol=1e-6)
    assert torch.allclose(out["action_logits"], fresh["action_logits"], atol=1e-6)


def test_the_derived_statistics_are_refreshed_once_after_new_weights_not_before_every_pass():
    """A captured graph never runs the normalisers' Python, so their derived statistics must be
    refreshed after the inference loop loads new weights (`InferenceLoop.reload` ->
    `InferenceWorker.weights_changed`), and only then: on a GPU each refresh is work outside the
    graph. Counted on the static path (the same calls as with graphs)."""
    c = _components("CartPole-v1", False)
    worker, inference = c.workers[0], c.inferences[0]
    static = twin(inference, cuda_graphs=True)
    graphed = static._graphed
    calls = []
    refresh = graphed.refresh
    graphed.refresh = lambda: calls.append(1) or refresh()
    learner = _components("CartPole-v1", False).models[0]
    weights = SharedWeights(learner)
    weights.publish(learner, 1)
    loop = InferenceLoop(static, weights)
    worker.reset()
    requests = [(worker.splits[s].index, 0) for s in range(2)]
    for _ in range(3):  # the first weights, then none new
        loop.handle(requests)
    assert (len(calls), static.policy_version) == (1, 1)
    lnorm = next(m for m in learner.modules() if isinstance(m, RunningMeanStd))
    lnorm.update(torch.randn(64, 4) * 3 + 2)
    weights.publish(learner, 2)
    for _ in range(3):
        loop.handle(requests)
    assert (len(calls), static.policy_version) == (2, 2)
    norm = next(m for m in static.model.modules() if isinstance(m, RunningMeanStd))
    assert torch.allclose(norm.derived()[0], lnorm.mean.float(), atol=1e-5)


def test_derive_in_place_keeps_the_tensors_and_matches_a_fresh_derivation():
    n = RunningMeanStd((3,))
    n.derive_in_place = True
    first = n.derived()
    ptrs = [t.data_ptr() for t in first]
    n.update(torch.randn(100, 3) * 2 + 1)
    second = n.derived()
    assert [t.data_ptr() for t in second] == ptrs
    plain = RunningMeanStd((3,))
    plain.load_state_dict(n.state_dict())
    for a, b in zip(second, plain.derived(), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("env,rnn,core", [("CartPole-v1", False, "gru"), ("memory_cue", True, "lstm")])
def test_an_eager_pass_with_its_outputs_packed_writes_what_it_writes_field_by_field(env, rnn, core):
    """Off the CPU an eager pass (no graphs) sends its outputs to the host as one packed tensor
    (`InferenceWorker._pack_outputs`); forced on here, it writes what the field-by-field path does."""
    c = _components(env, rnn, core)
    worker, buf, inference = c.workers[0], c.layout.buffers, c.inferences[0]
    assert not inference._pack_outputs  # on the CPU the outputs are written where they are
    inference._np = None  # the tensor path, as on a GPU
    worker.reset()
    for step in range(2):
        requests = [(worker.splits[s].index, worker.policy_request(s)[1]) for s in range(2)]
        three = [(torch.tensor([1, 4, 6]), requests[0][1])]
        for batch in (requests, three):
            before = _snapshot(buf)
            torch.manual_seed(7 + step)
            inference.infer(batch)
            plain = _snapshot(buf)
            _restore(buf, before)
            inference._pack_outputs = True
            torch.manual_seed(7 + step)
            inference.infer(batch)
            inference._pack_outputs = False
            packed = _snapshot(buf)
            assert inference._layout is not None
            for name in plain:
                assert torch.equal(plain[name].nan_to_num(), packed[name].nan_to_num()), name
        for s in range(2):
            worker.advance(s)


def test_a_failed_capture_is_logged_once_and_the_worker_acts_eagerly_from_then_on(monkeypatch, caplog):
    """A capture that raises (an operation a graph cannot hold) leaves the reason in `failure`,
    logs one warning, and every bucket from then on runs the eager pass, with the same outputs."""
    c = _components("CartPole-v1", False)
    inference = c.inferences[0]
    graphed = twin(inference, cuda_graphs=True)._graphed
    calls = []

    def refuse(rows):
        calls.append(rows)
        raise RuntimeError("operation not permitted when stream is capturing")

    graphed.capture = True  # as on a GPU; the capture itself refused by the stand-in
    monkeypatch.setattr(graphed, "_capture", refuse)
    monkeypatch.setattr("surge.sampling.graphed_act._recover", lambda device: None)
    c.layout.buffers.obs[:, 0] = torch.randn(len(c.layout.buffers.obs), 4)
    with caplog.at_level("WARNING", logger="surge"):
        first = {k: v.clone() for k, v in graphed(torch.arange(0, 8), 0).items()}
        graphed(torch.arange(0, 16), 0)  # another bucket: no second attempt
    assert calls == [8] and "not permitted" in graphed.failure
    assert sum("capturing a CUDA graph of act failed" in r.message for r in caplog.records) == 1
    ref = inference.act(inference.model, c.layout.buffers.obs[:8, 0], torch.empty(8, 0), ActContext())
    assert torch.allclose(first["values"], ref["values"], atol=1e-6)
