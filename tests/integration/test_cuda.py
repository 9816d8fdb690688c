"""surge on a CUDA GPU (`--device=gpu`); every test is skipped where torch sees no GPU, as on CI.
They run on a lent GPU machine through `benchmarks/gpu_session.sh surge`.

- One learner step on the GPU applies the same gradient as the same step on the CPU (the CPU step
  is the reference; `test_learner_reference.py` checks it against the papers' formulas). Inputs
  come from the CPU-side trajectory buffers, as in a run; the learner moves them.
- APPO trains CartPole-v1 to a greedy return >= 475 with its learner and inference on the GPU, in
  the serial and async placements, with the learning test's hyper-parameters and budget (`tests/learning/
  test_cartpole.py`), and the checkpoint is played on the CPU.
- DQN trains CartPole-v1 on the GPU in the async placement and its checkpoint plays on the CPU.
- A learner's batch goes from the page-locked trajectory buffers to the GPU by DMA
  (`surge.data.device_copy`), equal to the host gather's and complete when the copy returns.
- An inference worker's act replayed from captured CUDA graphs (`--cuda_graphs`) acts as the eager
  pass, and with a learner's new weights once they are loaded.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from surge.algorithms.appo.learner import Learner
from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.data.device_copy import device_copy_for
from surge.models.actor_critic import ActorCritic
from surge.models.normalization import RunningMeanStd
from surge.runtime.components import build_components
from surge.runtime.shared_state import SharedWeights
from surge.sampling.inference import InferenceWorker
from tests.filled_buffers import filled_buffers
from tests.integration.test_learner_reference import (
    ACTION_SPACE,
    GAE,
    OBS_SPACE,
    VTRACE,
    N,
    StubBuffers,
    _batch,
    _cfg,
)
from tests.learning.test_cartpole import HYPERPARAMS, KIND, PLACEMENTS
from tests.play_checkpoint import play

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from gpu_timing import gpu_busy_us  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("estimator", ["gae", "vtrace"])
def test_one_learner_step_on_the_gpu_equals_the_cpu_step(tmp_path, estimator):
    data = _batch(seed=3)
    cfg = _cfg(tmp_path, *(GAE if estimator == "gae" else VTRACE))
    torch.manual_seed(0)
    model = ActorCritic(cfg, OBS_SPACE, ACTION_SPACE)
    gpu_model = copy.deepcopy(model).to("cuda")
    cpu = Learner(cfg, model, StubBuffers(data), torch.device("cpu"))
    gpu = Learner(cfg, gpu_model, StubBuffers(data), torch.device("cuda"))
    cpu.train(torch.arange(N))
    gpu.train(torch.arange(N))
    for (name, p), q in zip(cpu.model.named_parameters(), gpu.model.parameters(), strict=True):
        assert q.device.type == "cuda", name
        torch.testing.assert_close(
            q.grad.cpu(), p.grad, rtol=1e-4, atol=1e-6, msg=lambda m, n=name: f"{n}: {m}"
        )
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-5, atol=1e-6)


# the placements with inference on the learning device: acting in the rollout workers
# (--policy_workers_per_policy=0) acts on the CPU and is refused with --device=gpu (test_config.py)
GPU_PLACEMENTS = [p for p, flags in PLACEMENTS.items() if "--policy_workers_per_policy=0" not in flags]


@pytest.mark.slow
@pytest.mark.parametrize("placement", GPU_PLACEMENTS)
def test_appo_learns_cartpole_on_the_gpu(tmp_path, placement):
    args = ["--env=CartPole-v1", "--experiment=cp", f"--train_dir={tmp_path}"]
    assert train(parse_cfg([*args, *PLACEMENTS[placement], *HYPERPARAMS, "--device=gpu"])) == "done"
    returns = play([*args, "--device=cpu"], "APPO", KIND[placement])
    assert np.mean(returns) >= 475, returns


@pytest.mark.slow
def test_dqn_trains_on_the_gpu_and_plays_on_the_cpu(tmp_path):
    args = ["--env=CartPole-v1", "--experiment=dqn", f"--train_dir={tmp_path}"]
    run = [
        "--algo=DQN", "--device=gpu", "--serial_mode=False", "--num_workers=1", "--num_envs_per_worker=4",
        "--train_for_env_steps=6000", "--learning_starts=1000", "--decorrelate_experience_max_seconds=0",
    ]  # fmt: skip
    assert train(parse_cfg([*args, *run])) == "done"
    returns = play([*args, "--device=cpu"], "DQN", "latest", episodes=2)
    assert len(returns) == 2 and all(r >= 1 for r in returns), returns


def test_the_gpus_busy_time_grows_with_its_work():
    # benchmarks/gpu_timing.py: the profiler's summed kernel time per env frame; 8 matmuls of 2048^2
    # take the GPU longer than 1 (the same frames reported)
    x = torch.randn(2048, 2048, device="cuda")

    def work(n: int):
        def step() -> int:
            for _ in range(n):
                x @ x
            return 100

        return step

    one, eight = gpu_busy_us(work(1), 4, x.device), gpu_busy_us(work(8), 4, x.device)
    assert 0 < one < eight


def test_shared_weights_cross_from_a_gpu_model_to_gpu_and_cpu_models():
    # SharedWeights stages a GPU model's state through one flat tensor on the device
    def model(seed: int, device: str) -> torch.nn.Module:
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2)).to(
            device
        )

    learner = model(0, "cuda")
    weights = SharedWeights(learner)
    weights.publish(learner, policy_version=7)
    for reader in (model(1, "cuda"), model(2, "cpu")):
        assert weights.load_into(reader) == 7
        for a, b in zip(learner.state_dict().values(), reader.state_dict().values(), strict=True):
            if a.is_floating_point():
                assert torch.equal(a.cpu(), b.cpu())


def test_a_batch_goes_to_the_gpu_by_dma_from_the_registered_buffers():
    # surge.data.device_copy: the buffers' own memory is page-locked in place, the batch equals the
    # host gather's, and it is complete when `copy` returns (the slots are overwritten at once after)
    buf = filled_buffers(16, img=(3, 72, 128)).share_memory()  # as a learner process has them
    cuda = torch.device("cuda")
    copier = device_copy_for(buf, cuda)
    assert copier is not None and device_copy_for(buf, cuda) is copier  # registered once a process
    # the observations (138 KiB a slot) are page-locked; the small fields are gathered, not locked
    assert buf.obs["img"].is_pinned() and not buf.rewards.is_pinned()
    slots = torch.tensor([8, 9, 10, 11, 0, 1, 2, 3, 13])
    expected = buf.gather(slots)
    got = copier.copy(slots)
    for name in buf.FIELDS:  # the slots are written again at once, as a rollout worker would
        for t in got[name].values() if isinstance(got[name], dict) else [got[name]]:
            assert t.device.type == "cuda"
        torch_tree = getattr(buf, name)
        for t in torch_tree.values() if isinstance(torch_tree, dict) else [torch_tree]:
            t.zero_()
    for name in buf.FIELDS:
        ref = expected[name]
        for key in ref if isinstance(ref, dict) else [None]:
            out = (got[name][key] if key else got[name]).cpu()
            assert torch.equal(out, ref[key] if key else ref), (name, key)
    copier.close()
    assert not buf.obs["img"].is_pinned()


@pytest.mark.parametrize("env,core", [("CartPole-v1", "gru"), ("memory_cue", "lstm")])
def test_act_replayed_from_cuda_graphs_acts_as_the_eager_pass_also_after_new_weights(env, core):
    # surge.sampling.graphed_act: one graph captured per bucket; its outputs equal the eager
    # pass's on the same model; after a learner's new weights and normaliser statistics are
    # loaded in place, the replay acts with them; each replay draws fresh random actions
    flags = [f"--env={env}", "--num_workers=1", "--num_envs_per_worker=16", "--worker_num_splits=2"]
    flags += ["--rollout=4", "--recurrence=4", "--batch_size=32", "--seed=3", "--device=cuda"]
    flags += ["--use_rnn=True", f"--rnn_type={core}", "--normalize_input=True", "--mixed_precision=none"]
    c = build_components(parse_cfg(flags))
    base = c.inferences[0]
    model = copy.deepcopy(base.model)  # the worker's own, as in an inference process
    kw = {"num_actors": base.num_actors}
    eager = InferenceWorker(model, base.buffers, base.device, base.act, **kw)
    graphed = InferenceWorker(model, base.buffers, base.device, base.act, cuda_graphs=True, **kw)
    buf = base.buffers
    g = torch.Generator().manual_seed(0)
    for leaf in buf.obs.values() if isinstance(buf.obs, dict) else [buf.obs]:
        leaf.copy_(torch.randn(leaf.shape, generator=g).to(leaf.dtype))
    buf.rnn_states.copy_(torch.randn(buf.rnn_states.shape, generator=g))

    def outputs(worker, slots, t):
        worker.infer([(slots, t)])
        return {k: getattr(buf, k)[slots, t].clone() for k in ("values", "action_logits", "actions")} | {
            "next": buf.rnn_states[slots, t + 1].clone()
        }

    def check(slots, t):
        e, gr = outputs(eager, slots, t), outputs(graphed, slots, t)
        for k in ("values", "action_logits", "next"):
            assert torch.allclose(e[k], gr[k], atol=1e-5, rtol=1e-5), k
        lp = torch.log_softmax(buf.action_logits[slots, t], -1).gather(
            -1, buf.actions[slots, t].long().view(-1, 1)
        )
        assert torch.allclose(buf.behavior_log_probs[slots, t], lp.view(-1), atol=1e-5)

    for slots in (torch.arange(0, 8), torch.tensor([3, 9, 12])):
        check(slots, 1)
    act = graphed._graphed
    assert act is not None and act.failure is None and act.captured == [8], (act.failure, act.captured)
    draws = torch.stack([outputs(graphed, torch.arange(0, 8), 1)["actions"] for _ in range(20)])
    assert len({tuple(r.tolist()) for r in draws}) > 1  # fresh random numbers on every replay
    learner = copy.deepcopy(model)
    with torch.no_grad():
        for p in learner.parameters():
            p.add_(torch.randn(p.shape, generator=g).to(p.device) * 0.1)
    norm = next(m for m in learner.modules() if isinstance(m, RunningMeanStd))
    norm.update(torch.randn(64, *norm.mean.shape, generator=g).cuda() * 3 + 2)
    weights = SharedWeights(learner)
    weights.publish(learner, policy_version=3)
    before = outputs(graphed, torch.arange(0, 8), 1)["values"]
    assert weights.load_into(model) == 3
    graphed.weights_changed()  # as the inference loop does after a load (`InferenceLoop.reload`)
    after = outputs(graphed, torch.arange(0, 8), 1)["values"]
    assert not torch.allclose(before, after)
    # against a model of its own (the eager pass on `model` would refresh the graph's statistics
    # in place first): the replay read the new weights and the refreshed normaliser statistics
    fresh = InferenceWorker(copy.deepcopy(learner), base.buffers, base.device, base.act, **kw)
    assert torch.allclose(outputs(fresh, torch.arange(0, 8), 1)["values"], after, atol=1e-5, rtol=1e-5)
    check(torch.arange(0, 8), 1)


def test_an_act_that_syncs_with_the_host_fails_capture_and_acts_eagerly_with_cuda_usable_after():
    # surge.sampling.graphed_act: a real capture failure (`.item()` inside act) is caught, logged,
    # its CUDA error consumed (the next kernel launch does not raise it), and the pass acts eagerly
    from surge.learning.algorithm import sampled_act
    from surge.sampling.graphed_act import GraphedAct

    flags = ["--env=CartPole-v1", "--num_workers=1", "--num_envs_per_worker=16", "--worker_num_splits=2"]
    flags += ["--rollout=4", "--batch_size=32", "--seed=3", "--device=cuda", "--mixed_precision=none"]
    c = build_components(parse_cfg(flags))
    base = c.inferences[0]
    model = copy.deepcopy(base.model)

    def syncing_act(m, obs, rnn, ctx):
        out = sampled_act(m, obs, rnn, ctx)
        out["values"] = out["values"] * float(out["values"].sum().item() != 0.5)  # a host sync
        return out

    buf = base.buffers
    buf.obs.copy_(torch.randn(buf.obs.shape))
    act = GraphedAct(model, syncing_act, buf.obs, buf.rnn_states, 16, torch.device("cuda"), capture=True)
    out = act(torch.arange(0, 8), 1)
    assert act.failure is not None and act.captured == []
    ref = sampled_act(model, buf.obs[:8, 1].cuda(), torch.empty(8, 0, device="cuda"), act.ctx)
    assert torch.allclose(out["values"], ref["values"].cpu(), atol=1e-5)
    torch.ones(4, device="cuda").mul_(2).sum().item()  # CUDA still usable
