"""On the CPU, inference reads and writes a contiguous request through numpy views of the trajectory
buffers (`InferenceWorker._infer_views`, cheaper than indexing the tensors). It must write exactly
what the tensor path writes, at the same places, and nothing elsewhere."""

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.runtime.components import build_components
from tests.inference_twin import twin


def _snapshot(buf):
    return {
        name: getattr(buf, name).clone()
        for name in buf.FIELDS
        if isinstance(getattr(buf, name), torch.Tensor)
    }


def _restore(buf, snap):
    for name, value in snap.items():
        getattr(buf, name).copy_(value)


@pytest.mark.parametrize(
    "env,rnn,core",
    [("CartPole-v1", False, "gru"), ("CartPole-v1", True, "gru"), ("memory_cue", True, "lstm")],
)
def test_the_numpy_view_path_writes_what_the_tensor_path_writes(env, rnn, core):
    flags = [f"--env={env}", "--num_workers=1", "--num_envs_per_worker=8", "--worker_num_splits=2"]
    flags += ["--rollout=4", "--recurrence=4" if rnn else "--recurrence=1", "--batch_size=16", "--seed=3"]
    flags += [f"--use_rnn={rnn}", f"--rnn_type={core}"]
    c = build_components(parse_cfg(flags))
    worker, buf, inference = c.workers[0], c.layout.buffers, c.inferences[0]
    assert inference._np is not None  # the views exist on the CPU
    worker.reset()
    inference.policy_version = 7
    for t_step in range(3):
        for s in range(len(worker.splits)):
            _, t = worker.policy_request(s)
            index = worker.splits[s].index
            assert isinstance(index, slice)
            before = _snapshot(buf)
            torch.manual_seed(100 + t_step)
            inference.infer([(index, t)])  # views
            by_views = _snapshot(buf)
            _restore(buf, before)
            views, inference._np, inference._views = inference._np, None, None
            torch.manual_seed(100 + t_step)
            inference.infer([(index, t)])  # tensors
            inference._np = inference._views = views
            by_tensors = _snapshot(buf)
            changed = 0
            for name in by_views:
                assert torch.equal(by_views[name], by_tensors[name]) or torch.allclose(
                    by_views[name], by_tensors[name], equal_nan=True, rtol=0, atol=0
                ), name
                changed += int(not torch.allclose(by_views[name], before[name], equal_nan=True))
            assert changed >= 4 + rnn  # actions, log-probs, values, logits (+ the next hidden state)
            assert torch.equal(buf.policy_version[index, t], torch.full((4,), 7))
            worker.advance(s)


@pytest.mark.parametrize("env,rnn,core", [("CartPole-v1", False, "gru"), ("memory_cue", True, "lstm")])
def test_several_contiguous_requests_share_one_pass_and_write_what_the_tensor_path_writes(env, rnn, core):
    """Two splits' requests in one call (the inference process's batches, and the rollout worker
    acting on its ready splits together): one forward pass of both splits' rows, each row's outputs
    written at its own split's place, equal to the tensor path's gathers and scatters."""
    flags = [f"--env={env}", "--num_workers=1", "--num_envs_per_worker=8", "--worker_num_splits=2"]
    flags += ["--rollout=4", "--recurrence=4" if rnn else "--recurrence=1", "--batch_size=16", "--seed=3"]
    flags += [f"--use_rnn={rnn}", f"--rnn_type={core}"]
    c = build_components(parse_cfg(flags))
    worker, buf, inference = c.workers[0], c.layout.buffers, c.inferences[0]
    worker.reset()
    inference.policy_version = 5
    batch_sizes = []
    inference.model.encoder.register_forward_pre_hook(lambda m, args: batch_sizes.append(_rows(args)))
    for t_step in range(3):
        requests = [(worker.splits[s].index, worker.policy_request(s)[1]) for s in range(2)]
        assert all(isinstance(index, slice) for index, _ in requests)
        before = _snapshot(buf)
        torch.manual_seed(200 + t_step)
        inference.infer(requests)  # views
        by_views = _snapshot(buf)
        _restore(buf, before)
        views, inference._np, inference._views = inference._np, None, None
        torch.manual_seed(200 + t_step)
        inference.infer(requests)  # tensors: gathered index tensors
        inference._np = inference._views = views
        for name, value in by_views.items():
            assert torch.allclose(value, getattr(buf, name), equal_nan=True, rtol=0, atol=0), name
        for index, t in requests:  # both splits' rows were acted on
            assert torch.equal(buf.policy_version[index, t], torch.full((4,), 5))
            assert not torch.equal(buf.values[index, t], before["values"][index, t])
        for s in range(2):
            worker.advance(s)
    assert batch_sizes == [8] * 6  # one pass of both splits' 4 rows per call, per path


def _rows(args) -> int:
    obs = args[0]
    return len(next(iter(obs.values())) if isinstance(obs, dict) else obs)


@pytest.mark.parametrize("path", ["views", "static", "eager_packed"])
def test_requests_at_different_steps_write_their_own_rows_as_the_tensor_path_does(path):
    """Two splits' requests at different steps t (as an inference process gets them) written back
    request by request through the numpy views (`_write_requests`): on the CPU's view path, the
    graphed path's static buffers (`cuda_graphs`, run eagerly) and a GPU's eager path (outputs
    packed): the same as the tensor path's index writes, and nothing else."""
    flags = ["--env=CartPole-v1", "--num_workers=1", "--num_envs_per_worker=8", "--worker_num_splits=2"]
    flags += ["--rollout=4", "--recurrence=4", "--batch_size=16", "--seed=3", "--use_rnn=True"]
    c = build_components(parse_cfg(flags))
    worker, buf, inference = c.workers[0], c.layout.buffers, c.inferences[0]
    g = torch.Generator().manual_seed(9)
    buf.obs.copy_(torch.randn(buf.obs.shape, generator=g))
    buf.rnn_states.copy_(torch.randn(buf.rnn_states.shape, generator=g))
    inference.policy_version = 6
    requests = [(worker.splits[0].index, 1), (worker.splits[1].index, 3)]
    before = _snapshot(buf)
    tensors = twin(inference)
    tensors.policy_version = 6
    tensors._np = tensors._views = None  # the reference: index tensors, `_write`
    torch.manual_seed(11)
    tensors.infer(requests)
    by_tensors = _snapshot(buf)
    _restore(buf, before)
    if path == "views":
        candidate = inference
    elif path == "static":
        candidate = twin(inference, cuda_graphs=True)
        assert candidate._graphed is not None
    else:
        candidate = twin(inference)
        candidate._np, candidate._pack_outputs = None, True
    assert candidate._views is not None
    candidate.policy_version = 6
    torch.manual_seed(11)
    candidate.infer(requests)
    for name, value in by_tensors.items():
        got = getattr(buf, name)
        if value.is_floating_point():  # (a product over rows at another address may round otherwise)
            assert torch.allclose(got, value, rtol=1e-6, atol=1e-6, equal_nan=True), name
        else:
            assert torch.equal(got, value), name
    written = {(s, t) for index, t in requests for s in range(index.start, index.stop)}
    for name in ("values", "policy_version", "rnn_states"):
        after, old = getattr(buf, name), before[name]
        diff = (
            ~((after == old) | (after.isnan() & old.isnan())) if after.is_floating_point() else after != old
        )
        if diff.dim() > 2:
            diff = diff.flatten(2).any(-1)
        step = 1 if name == "rnn_states" else 0  # the next hidden state goes one step on
        assert {(s, t - step) for s, t in diff.nonzero().tolist()} == written, name


@pytest.mark.parametrize("path", ["views", "static", "eager_packed"])
def test_an_act_that_keeps_no_state_leaves_the_buffers_hidden_states_alone(path):
    """DUMMY_SAMPLER's act returns a `[N, 0]` hidden state whatever the buffers' width (a model
    with an RNN): the actions are written, the hidden states are not touched."""
    flags = ["--env=CartPole-v1", "--num_workers=1", "--num_envs_per_worker=8", "--worker_num_splits=2"]
    flags += ["--rollout=4", "--recurrence=4", "--seed=3", "--use_rnn=True", "--algo=DUMMY_SAMPLER"]
    c = build_components(parse_cfg(flags))
    worker, buf, inference = c.workers[0], c.layout.buffers, c.inferences[0]
    assert buf.rnn_states.shape[-1] > 0
    buf.rnn_states.copy_(torch.randn(buf.rnn_states.shape))
    if path == "static":
        inference = twin(inference, cuda_graphs=True)
    elif path == "eager_packed":
        inference._np, inference._pack_outputs = None, True
    before = buf.rnn_states.clone()
    requests = [(worker.splits[0].index, 1), (worker.splits[1].index, 2)]
    buf.actions[:] = -1
    inference.infer(requests)
    assert torch.equal(buf.rnn_states, before)
    for index, t in requests:
        assert (buf.actions[index, t] >= 0).all()
