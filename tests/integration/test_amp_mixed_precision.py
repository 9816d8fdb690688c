"""`--mixed_precision` (issue 21, surge.learning.amp): autocast is active in the learner's forward
pass and in inference's act (a dtype seen by a forward hook), what the loss reads and what is
written to the buffers is float32 (log-probs equal float32 log-softmax of the stored logits), the
GradScaler path (fp16) takes the same step as float32 and counts an overflow as a skipped step, a
short serial CartPole run trains under bf16, and the refusals."""

import types
from pathlib import Path

import numpy as np
import pytest
import torch

import surge.algorithms.appo.learner as learner_mod
from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.enjoy import enjoy
from surge.errors import ConfigError
from surge.learning.amp import autocast_fresh, casts_kept, check_mixed_precision
from surge.runtime.components import build_components, make_inference, make_model
from surge.runtime.ranks import RankInfo, check_data_parallel
from surge.runtime.serial import SerialSampler
from surge.runtime.shared_state import SharedWeights
from surge.sampling.inference_loop import InferenceLoop

# fmt: off
ARGS = [
    "--env=CartPole-v1", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=4",
    "--worker_num_splits=1", "--rollout=8", "--batch_size=16", "--seed=1", "--encoder_type=mlp",
    "--encoder_mlp_layers", "16", "--hidden_size=16", "--num_torch_threads=1",
]
# fmt: on


def _components(tmp_path, *extra):
    cfg = parse_cfg([f"--train_dir={tmp_path}", *ARGS, *extra])
    return cfg, build_components(cfg)


def _slots(sampler):
    slots = None
    while slots is None:
        sampler.step()
        slots = sampler.take()
    return slots


def _record_head_dtypes(model):
    seen = []
    model.policy_head.register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    return seen


@pytest.mark.parametrize("vtrace", [False, True])
@pytest.mark.parametrize("use_rnn", [False, True])
def test_bf16_forward_under_autocast_loss_reads_float32(tmp_path, monkeypatch, vtrace, use_rnn):
    cfg, c = _components(
        tmp_path,
        "--mixed_precision=bf16",
        f"--with_vtrace={vtrace}",
        f"--use_rnn={use_rnn}",
        f"--recurrence={8 if vtrace else 4}",
    )
    learner = c.learners[0]
    seen = _record_head_dtypes(learner.model)
    loss_dtypes = []
    real_loss = learner_mod.ppo_loss

    def spy(*args, **kwargs):
        loss_dtypes.append([a.dtype for a in args if isinstance(a, torch.Tensor)])
        loss_dtypes[-1] += [h.logits.dtype for d in args[:2] for h in d.heads]
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(learner_mod, "ppo_loss", spy)
    sampler = SerialSampler(c)
    slots = _slots(sampler)
    seen.clear()
    before = [p.detach().clone() for p in learner.model.parameters()]
    stats = learner.train(slots)
    if not vtrace:  # GAE's bootstrap value (one step, before the minibatches) stays float32
        assert seen.pop(0) == torch.float32
    assert seen and set(seen) == {torch.bfloat16}  # the minibatches' forward ran under autocast
    assert loss_dtypes and all(set(d) <= {torch.float32, torch.int64} for d in loss_dtypes)
    assert all(p.dtype == torch.float32 for p in learner.model.parameters())  # float32 weights
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.model.parameters(), strict=True))
    assert np.isfinite(stats["loss"]) and stats["skipped_updates"] == 0
    sampler.release(slots)


def test_default_forward_is_float32(tmp_path):
    cfg, c = _components(tmp_path)
    seen = _record_head_dtypes(c.learners[0].model)
    sampler = SerialSampler(c)
    slots = _slots(sampler)
    c.learners[0].train(slots)
    assert seen and set(seen) == {torch.float32}
    assert c.inferences[0]._autocast is None
    sampler.release(slots)


def test_bf16_inference_writes_float32(tmp_path):
    cfg, c = _components(tmp_path, "--mixed_precision=bf16", "--use_rnn=True")
    seen = _record_head_dtypes(c.models[0])
    raw = []  # what `act` returned (still inside autocast)
    act = c.inferences[0].act
    c.inferences[0].act = lambda *a: raw.append(act(*a)) or raw[-1]
    sampler = SerialSampler(c)
    slots = _slots(sampler)
    assert seen and set(seen) == {torch.bfloat16}  # act ran under autocast
    assert raw and all(v.dtype in (torch.float32, torch.int64) for v in raw[0].values())
    b = c.layout.buffers
    for name in ("behavior_log_probs", "values", "action_logits", "rnn_states"):
        assert getattr(b, name).dtype == torch.float32
    # the log-probs were computed in float32 from the (float32) logits written: log-softmax of the
    # stored logits in float64 (a bf16 log-softmax is off by ~1e-2)
    s = slots[0] if isinstance(slots, list) else slots
    logits = b.action_logits[s, :8].double()
    ref = torch.log_softmax(logits, -1).gather(-1, b.actions[s, :8].long().unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(b.behavior_log_probs[s, :8].double(), ref, atol=1e-5)
    sampler.release(slots)


def _learner_pair(tmp_path):
    _, a = _components(tmp_path / "a", "--max_grad_norm=0")
    _, b = _components(tmp_path / "b", "--max_grad_norm=0")
    b.learners[0].model.load_state_dict(a.learners[0].model.state_dict())
    return a.learners[0], b.learners[0]


def test_grad_scaler_step_equals_float32_step_and_counts_overflow(tmp_path):
    plain, scaled = _learner_pair(tmp_path)
    # the fp16 path's scaler (torch.amp.GradScaler runs on the CPU too); power-of-two scales make
    # scaling and unscaling exact, so the step must equal the float32 one
    scaled.grad_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    x = torch.randn(6, 4)

    def loss(learner):
        logits, values = learner.model.evaluate(x[None], torch.zeros(1, 6, 0), torch.zeros(1, 6), 1)
        return (values**2).mean() + logits.pow(2).mean()

    plain.apply_gradients(loss(plain))
    scaled.apply_gradients(loss(scaled))
    for p, q in zip(plain.model.parameters(), scaled.model.parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-7)
    assert scaled.policy_version == plain.policy_version == 1
    before = [p.detach().clone() for p in scaled.model.parameters()]
    scaled.apply_gradients(loss(scaled) * float("inf"))  # an overflow
    assert scaled.last_step_skipped and scaled.skipped_updates == 1 and scaled.policy_version == 1
    assert scaled.grad_scaler.get_scale() == 2.0**9  # GradScaler's backoff_factor 0.5
    assert all(torch.equal(a, b) for a, b in zip(before, scaled.model.parameters(), strict=True))
    # the scale is saved with the learner state and restored
    _, fresh = _learner_pair(tmp_path / "c")
    fresh.grad_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    fresh.load_state_dict(scaled.state_dict())
    assert fresh.grad_scaler.get_scale() == 2.0**9


def test_refusals(tmp_path):
    for value, match in [("fp8", "invalid choice"), ("fp16", "bf16")]:  # fp16 on the CPU: use bf16
        with pytest.raises(ConfigError, match=match) as e:
            parse_cfg([f"--train_dir={tmp_path}", *ARGS, f"--mixed_precision={value}"])
        assert e.value.field == "mixed_precision"
    with pytest.raises(ConfigError, match="A2C") as e:  # its learner does not autocast
        parse_cfg([f"--train_dir={tmp_path}", *ARGS, "--algo=A2C", "--mixed_precision=bf16"])
    assert e.value.field == "mixed_precision"
    gpu = types.SimpleNamespace(mixed_precision="bf16", algo="APPO", device="gpu")
    no_bf16 = types.SimpleNamespace(is_available=lambda: True, is_bf16_supported=lambda: False)
    real_cuda = torch.cuda
    try:
        torch.cuda = no_bf16  # a pre-Ampere GPU
        with pytest.raises(ConfigError, match="fp16"):
            check_mixed_precision(gpu)
    finally:
        torch.cuda = real_cuda
    # data-parallel ranks: bf16 runs, fp16 (GradScaler over all-reduced gradients) is refused
    cfg = parse_cfg([f"--train_dir={tmp_path}", *ARGS, "--mixed_precision=bf16"])
    check_data_parallel(cfg, RankInfo(0, 2, 0))
    cfg.mixed_precision = "fp16"
    with pytest.raises(ConfigError) as e:
        check_data_parallel(cfg, RankInfo(0, 2, 0))
    assert e.value.field == "mixed_precision"


@pytest.mark.slow
def test_bf16_serial_cartpole_trains(tmp_path):
    # fmt: off
    args = ["--env=CartPole-v1", "--experiment=cp", f"--train_dir={tmp_path}"]
    hp = [
        "--serial_mode=True", "--num_workers=2", "--num_envs_per_worker=8", "--train_for_env_steps=60000",
        "--seed=3", "--encoder_type=mlp", "--encoder_subtype=mlp", "--encoder_mlp_layers", "64", "64",
        "--use_rnn=False", "--recurrence=1", "--with_vtrace=False", "--nonlinearity=tanh",
        "--batch_size=128", "--num_batches_per_iteration=4", "--ppo_epochs=4", "--learning_rate=3e-4",
        "--max_grad_norm=0.5", "--reward_scale=0.1", "--exploration_loss_coeff=0.01",
        "--mixed_precision=bf16", "--num_torch_threads=1",
    ]
    # fmt: on
    assert train(parse_cfg([*args, *hp])) == "done"
    ev = parse_cfg(
        [*args, "--max_num_episodes=5", "--no_render=True", "--eval_deterministic=True"], evaluation=True
    )
    assert np.mean(enjoy(ev)["returns"]) >= 200  # a random policy: ~22


@pytest.mark.parametrize("cuda", [False, True])
def test_rl_games_mixed_precision_true_is_what_rl_games_runs(monkeypatch, cuda):
    """rl_games 1.6.5's `mixed_precision: True`: its PPO losses under `autocast('cuda',
    dtype=torch.bfloat16)` (a2c_discrete.py), i.e. bf16 on a CUDA device and float32 on the CPU
    (CUDA's autocast does nothing to CPU tensors), whatever the machine has: the translation is
    `bf16_cuda`, which the run resolves by its own `--device`."""
    import rl_games
    import yaml

    from surge.app.rl_games.translation import translate
    from surge.learning.amp import resolve_mixed_precision

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    path = Path(rl_games.__file__).parent / "configs" / "ppo_cartpole.yaml"
    data = yaml.safe_load(path.read_text())
    assert not translate(data, str(path)).values.get("mixed_precision")
    data["params"]["config"]["mixed_precision"] = True
    mode = translate(data, str(path)).values["mixed_precision"]
    assert mode == "bf16_cuda"
    model = torch.nn.Conv2d(1, 1, 1)  # a conv model: `auto` could pick bf16 on a CPU, this may not
    assert resolve_mixed_precision(mode, "APPO", torch.device("cpu"), model)[0] == "none"
    assert resolve_mixed_precision(mode, "APPO", torch.device("cuda"), model)[0] == "bf16"
    # rl_games' False is float32: not surge's default (auto), which picks bf16 on some CPUs
    data["params"]["config"]["mixed_precision"] = False
    assert translate(data, str(path)).values["mixed_precision"] == "none"


def _acting_copy(c, learner_model):
    """A second acting module with its own weights (an inference process's), and its worker."""
    model = make_model(c.cfg, c.info, torch.device("cpu")).acting
    model.load_state_dict(learner_model.state_dict())
    return model, make_inference(c.layout, model, torch.device("cpu"), 0)


def _weight_casts(worker, requests):
    """The weight casts one forward pass makes (`aten::_to_copy` of a 2-D weight's shape), from
    torch's profiler."""
    shapes = {tuple(p.shape) for p in worker.model.parameters() if p.dim() == 2}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        worker.infer(requests)
    return sum(
        e.count
        for e in prof.key_averages(group_by_input_shape=True)
        if e.key == "aten::_to_copy" and e.input_shapes and tuple(e.input_shapes[0]) in shapes
    )


def test_kept_casts_are_reused_and_follow_new_weights(tmp_path):
    """Under `casts_kept` (the async inference process) a forward pass reuses the weights' bf16
    casts of the previous one, and after the learner publishes new weights the worker acts as a
    fresh autocast pass with those weights does (the stale casts dropped on reload)."""
    cfg, c = _components(tmp_path, "--mixed_precision=bf16")
    learner_model = c.models[0]
    weights = SharedWeights(learner_model)
    kept_model, kept = _acting_copy(c, learner_model)
    ref_model, ref = _acting_copy(c, learner_model)  # a per-pass autocast, nothing kept: the reference
    b = c.layout.buffers
    requests = [(slice(0, 4), 0)]
    b.obs[0:4, 0] = torch.randn(4, *b.obs.shape[2:])
    loop = InferenceLoop(kept, weights)
    with casts_kept(torch.device("cpu")):
        loop.handle(requests)  # loads version 0 (the same weights) and casts them
        assert _weight_casts(kept, requests) == 0  # the second pass casts no weight
        with torch.no_grad():  # the learner's step: new weights, changed in place
            for p in learner_model.parameters():
                p.add_(torch.randn_like(p))
        weights.publish(learner_model, policy_version=1)
        loop.handle(requests)
        got = b.values[0:4, 0].clone(), b.action_logits[0:4, 0].clone()
    assert kept.policy_version == 1
    ref_model.load_state_dict(learner_model.state_dict())
    ref.infer(requests)
    assert _weight_casts(ref, requests) > 0  # without the kept casts every pass casts its weights
    assert torch.equal(got[0], b.values[0:4, 0]) and torch.equal(got[1], b.action_logits[0:4, 0])


def test_the_serial_sampler_keeps_casts_and_the_learner_never_trains_on_them(tmp_path):
    """The serial placement keeps the weights' bf16 casts between steps, and its learner trains in
    the same thread: every optimizer step must see the current weights (the same weights as a
    learner with nothing kept), and the next step's actions must come from the trained weights."""
    extra = ("--mixed_precision=bf16", "--ppo_epochs=3", "--max_grad_norm=0")
    _, kept = _components(tmp_path / "kept", *extra)
    _, plain = _components(tmp_path / "plain", *extra)
    plain.models[0].load_state_dict(kept.models[0].state_dict())
    sampler = SerialSampler(kept, keep_casts=True)  # as the serial placement makes it
    slots = _slots(sampler)  # stepped with the casts kept: the cache holds casts of these weights
    assert sampler._kept is not None
    try:
        batch = kept.learners[0].prepare_batch(slots)
        torch.manual_seed(5)  # the same minibatches for both
        plain.learners[0].train_batch(kept.learners[0].prepare_batch(slots))
        torch.manual_seed(5)
        kept.learners[0].train_batch(batch)  # 3 optimizer steps inside the kept region
        for a, b in zip(kept.models[0].parameters(), plain.models[0].parameters(), strict=True):
            assert torch.equal(a, b)
        # the next step acts with the trained weights: as a worker keeping nothing does
        _, ref = _acting_copy(kept, kept.models[0])
        requests = [(slice(0, 4), 1)]
        kept.inferences[0].infer(requests)
        got = kept.layout.buffers.values[0:4, 1].clone()
        sampler.drop_casts()
        with casts_kept(torch.device("cpu")):  # a fresh region: nothing kept from before
            ref.infer(requests)
        assert torch.equal(got, kept.layout.buffers.values[0:4, 1])
    finally:
        sampler.drop_casts()
    sampler.release(slots)


def test_the_learners_autocast_regions_see_weights_changed_in_place_under_kept_casts():
    """`autocast_fresh` (the APPO learner's region) neither uses a cast kept from before nor
    leaves one: under `casts_kept`, a region after an in-place weight change computes with the new
    weights, as a region with nothing kept does (torch's own cache alone would reuse the old cast)."""
    torch.manual_seed(0)
    lin, x = torch.nn.Linear(8, 4), torch.randn(3, 8)
    cpu = torch.device("cpu")

    def fresh() -> torch.Tensor:  # a bf16 linear of the current weights, nothing cached
        return torch.nn.functional.linear(x.bfloat16(), lin.weight.bfloat16(), lin.bias.bfloat16())

    with casts_kept(cpu):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            lin(x)  # an inference pass: its casts are kept
        with torch.no_grad():
            lin.weight.add_(1.0)
        with autocast_fresh("bf16", cpu):
            first = lin(x)
        with torch.no_grad():
            lin.weight.add_(1.0)
        with autocast_fresh("bf16", cpu):
            second = lin(x)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            after = lin(x)  # the next inference pass: nothing stale left behind
    assert torch.equal(second, fresh()) and torch.equal(after, fresh())
    assert not torch.equal(first, second)
