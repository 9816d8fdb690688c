"""Each learner trains only on its own policy's experience (issue 19): a finished trajectory goes to
the learner of every policy that acted in it at an active step and to no other, with the other
policies' steps of a trajectory that changed policy masked out; the observation normaliser sees the
learner's own active steps only. The references are naive loops over the raw trajectory buffers."""

import time

import flaky_envs  # noqa: F401  (named by module on the command line)
import numpy as np
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.learning.batcher import traj_per_iteration
from surge.runtime.async_placement import AsyncPlacement
from surge.runtime.checkpoint import CheckpointManager
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler

P = 4
BASE = [
    "--env=CartPole-v1",
    "--experiment=routing",
    f"--num_policies={P}",
    "--policy_mapping=random",
    "--num_workers=2",
    "--num_envs_per_worker=8",
    "--rollout=16",
    "--recurrence=16",
    "--batch_size=64",
    "--num_batches_per_iteration=1",
    "--use_rnn=False",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "16",
    "--max_policy_lag=100000",
    "--seed=3",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
]


def _acted(buffers, s: int, p: int) -> np.ndarray:
    """Naive reference: `[T]` bool, the active steps of slot `s` policy `p` acted on."""
    pid, active = buffers.policy_id[s].tolist(), buffers.is_active[s].tolist()
    return np.array([pid[t] == p and active[t] for t in range(buffers.rollout)])


def _key(buffers, s: int) -> tuple:
    """What tells one trajectory apart from a later one in the same slot."""
    return (s, buffers.obs[s].numpy().tobytes(), buffers.policy_id[s].numpy().tobytes())


def test_serial_each_trajectory_reaches_exactly_the_learners_of_its_policies(tmp_path):
    cfg = parse_cfg([*BASE, f"--train_dir={tmp_path}", "--serial_mode=True", "--normalize_input=True"])
    c = build_components(cfg)
    buf = c.buffers
    expected: set[tuple] = set()  # (trajectory, policy) pairs handed over, from the raw buffers

    def recording(hand_over):
        def wrapped(split_idx, slots):
            # inactive steps, as an env's dead agents or a non-finite observation leave them: every
            # 7th trajectory wholly (it goes to no learner), every 5th from step 8 on
            for s in slots.tolist():
                if s % 7 == 0:
                    buf.is_active[s] = False
                elif s % 5 == 0:
                    buf.is_active[s, 8:] = False
            for s in slots.tolist():
                for p in range(P):
                    if _acted(buf, s, p).any():
                        expected.add((_key(buf, s), p))
            return hand_over(split_idx, slots)

        return wrapped

    for w in c.workers:
        w.hand_over = recording(w.hand_over)
    sampler = SerialSampler(c)
    received: set[tuple] = set()
    mixed = batches = 0
    for _ in range(64):
        sampler.step()
        for p in range(P):
            while (slots := sampler.take(p)) is not None:
                batches += 1
                # an iteration's worth of trajectories, rounded up to whole arrivals
                assert (
                    traj_per_iteration(cfg) <= len(slots) < traj_per_iteration(cfg) + c.block_pool.block_size
                )
                own = np.stack([_acted(buf, s, p) for s in slots.tolist()], axis=1)  # [T, N]
                assert own.any(axis=0).all()  # every trajectory holds steps of this policy ...
                for s in slots.tolist():
                    received.add((_key(buf, s), p))
                    mixed += len(set(buf.policy_id[s].tolist())) > 1
                learner = c.learners[p]
                b = learner.prepare_batch(slots)
                learner._mask_stale(b)
                # ... and the learner trains on those only (other policies' steps masked)
                assert torch.equal(b["valids"] > 0, torch.from_numpy(own))
                assert float(b["valid_fraction"]) == pytest.approx(own.mean())
                sampler.release(slots, p)
    for p, batcher in enumerate(sampler.batchers):  # routed, not yet in a batch
        received |= {(_key(buf, s), p) for own in batcher.pending for s in own}
    assert batches >= 2 * P and mixed > 0  # trajectories that changed policy were among them
    assert received == expected
    c.close()


def test_observation_normaliser_sees_only_own_active_steps(tmp_path):
    cfg = parse_cfg([*BASE, f"--train_dir={tmp_path}", "--serial_mode=True", "--normalize_input=True"])
    c = build_components(cfg)
    sampler = SerialSampler(c)
    p = 1
    while (slots := sampler.take(p)) is None:
        sampler.step()
    buf = c.buffers
    gen = torch.Generator().manual_seed(0)
    buf.is_active[slots] &= torch.rand(len(slots), cfg.rollout, generator=gen) > 0.3  # some inactive
    # naive reference: loop over the raw buffers; statistics of the normaliser's prior (one
    # pseudo-sample of mean 0 and variance 1) pooled with those observations
    xs = [
        buf.obs[s, t].double().numpy()
        for s in slots.tolist()
        for t in range(cfg.rollout)
        if buf.policy_id[s, t] == p and buf.is_active[s, t]
    ]
    x = np.stack(xs)
    n = len(x)
    mean = x.sum(0) / (1 + n)
    var = (1.0 + (x**2).sum(0)) / (1 + n) - mean**2
    learner = c.learners[p]
    b = learner.prepare_batch(slots)
    learner._mask_stale(b)
    learner._update_obs_normalizer(b)
    norm = c.models[p].obs_normalizer
    assert n < cfg.rollout * len(slots)  # something was left out
    assert float(norm.count) == 1 + n
    np.testing.assert_allclose(norm.mean.numpy(), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norm.var.numpy(), var, rtol=1e-4, atol=1e-6)
    c.close()


@pytest.mark.slow
def test_async_each_learner_gets_only_its_own_trajectories(tmp_path):
    """Episodes of exactly one rollout: every trajectory is one policy's, so a learner that gets only
    its own trains on every sample of its batch (valid_fraction 1; a quarter with whole blocks)."""
    args = [
        *BASE,
        f"--train_dir={tmp_path}",
        "--serial_mode=False",
        "--decorrelate_envs_on_one_worker=False",
        "--env_wrappers",
        "flaky_envs:EpisodesOf16Steps",
    ]
    cfg = parse_cfg(args)
    ckpts = [CheckpointManager(tmp_path / f"ckpt{p}", cfg.keep_checkpoints, p) for p in range(P)]
    placement = AsyncPlacement(cfg, ckpts, [None] * P)
    stats: dict[int, list[dict[str, float]]] = {p: [] for p in range(P)}
    try:
        placement.start()
        deadline = time.monotonic() + 120
        while min(len(s) for s in stats.values()) < 2 and time.monotonic() < deadline:
            for p, st in placement.step().train_stats.items():
                stats[p].append(st)
    finally:
        placement.close()
    for p in range(P):
        assert len(stats[p]) >= 2, f"policy {p} trained {len(stats[p])} batches"
        for st in stats[p]:
            assert st["valid_fraction"] == 1.0
            assert st["samples"] >= cfg.rollout * traj_per_iteration(cfg)


def _resume_cfg(tmp_path, exp: str, budget: int):
    return parse_cfg(
        [
            "--env=cartpole",
            f"--experiment={exp}",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_policies=2",
            "--policy_mapping=random",
            "--num_workers=2",
            "--num_envs_per_worker=4",
            "--batch_size=128",
            "--normalize_input=True",
            "--seed=7",
            f"--train_for_env_steps={budget}",
        ]
    )


def _last_checkpoint(tmp_path, exp: str, p: int) -> dict:
    return torch.load(
        sorted((tmp_path / exp / f"checkpoint_p{p}").glob("checkpoint_*.pth"))[-1], weights_only=True
    )


@pytest.mark.slow
def test_two_policies_stopped_mid_run_and_resumed_end_as_the_uninterrupted_run(tmp_path):
    """The sampler state holds each learner's pending trajectories and the per-slot holders: a
    serial run stopped by its budget mid-way and resumed ends with the uninterrupted run's weights,
    normalisers and optimizer state for both policies, bit for bit."""
    from surge.app.training_run import train

    n = 3000
    assert train(_resume_cfg(tmp_path, "whole", n)) == "done"
    assert train(_resume_cfg(tmp_path, "halves", n // 2)) == "done"
    (tmp_path / "halves" / "done").unlink()
    assert train(_resume_cfg(tmp_path, "halves", n)) == "done"
    assert "Resumed the sampler where it stopped" in (tmp_path / "halves" / "surge_log.txt").read_text()
    for p in range(2):
        a, b = _last_checkpoint(tmp_path, "whole", p), _last_checkpoint(tmp_path, "halves", p)
        assert a["learner"]["policy_version"] == b["learner"]["policy_version"] > 0
        for k, v in a["model"].items():
            assert torch.equal(v, b["model"][k]), f"policy {p}: {k} differs"
        for k, v in a["learner"]["optimizers"]["model"]["state"].items():
            for name, t in v.items():
                assert torch.equal(t, b["learner"]["optimizers"]["model"]["state"][k][name]), (
                    f"policy {p}: adam {k}.{name}"
                )


def test_units_without_a_step_to_learn_from_cost_no_optimizer_step(tmp_path):
    """A learner's passes follow its own samples: trajectories (V-trace units) of a batch with no
    valid step are left out, so a batch with 4 valid trajectories takes one minibatch per epoch."""
    args = [*BASE, f"--train_dir={tmp_path}", "--serial_mode=True", "--num_policies=1"]
    cfg = parse_cfg([*args, "--num_batches_per_iteration=4"])
    c = build_components(cfg)
    sampler = SerialSampler(c)
    while (slots := sampler.take(0)) is None:
        sampler.step()
    per_mb = cfg.batch_size // cfg.rollout
    assert len(slots) > per_mb  # without the rule: several minibatches per epoch
    c.buffers.is_active[slots[per_mb:]] = False
    learner = c.learners[0]
    stats = learner.train(slots)
    assert learner.policy_version == cfg.ppo_epochs
    assert stats["valid_fraction"] == pytest.approx(per_mb / len(slots))
    c.close()
