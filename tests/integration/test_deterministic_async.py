"""`--deterministic=True` (docs/reliability.md): two async runs (rollout workers, inference workers and
the learner in their own processes) with the same seed train bit-identical weights, on CartPole and
on Pong; a run with another seed trains other weights (the comparison can tell)."""

from pathlib import Path

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train

CARTPOLE = [
    "--env=cartpole",
    "--num_workers=2",
    # a round of 40 trajectories, an iteration of 16 (the benchmark's shape): an acting version
    # can be trained before the rounds of its slot's previous version are complete
    "--num_envs_per_worker=20",
    "--worker_num_splits=2",
    "--policy_workers_per_policy=2",  # each inference worker batches the splits of its own workers
    "--batch_size=512",
    "--train_for_env_steps=20000",
    "--set_workers_cpu_affinity=False",
]
# pong_1epoch's settings, smaller: a round of 2 x 4 envs x 32 steps, an iteration of 256 samples
PONG = [
    "--env=atari_pong",
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--worker_num_splits=2",
    "--rollout=32",
    "--batch_size=256",
    "--num_batches_per_iteration=1",
    "--ppo_epochs=1",
    "--normalize_input=True",
    "--train_for_env_steps=8192",
    "--set_workers_cpu_affinity=False",
]


def _final_weights(tmp_path: Path, name: str, flags: list[str]) -> dict[str, torch.Tensor]:
    args = [*flags, "--device=cpu", "--deterministic=True", f"--train_dir={tmp_path}", f"--experiment={name}"]
    assert train(parse_cfg(args)) == "done"
    ckpts = sorted((tmp_path / name / "checkpoint_p0").glob("checkpoint_*.pth"))
    state = torch.load(ckpts[-1], weights_only=True)
    assert state["learner"]["policy_version"] > 0
    return state["model"]


def _identical(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_cartpole_same_seed_same_weights(tmp_path):
    a = _final_weights(tmp_path, "a", [*CARTPOLE, "--seed=1"])
    b = _final_weights(tmp_path, "b", [*CARTPOLE, "--seed=1"])
    assert _identical(a, b)
    c = _final_weights(tmp_path, "c", [*CARTPOLE, "--seed=2"])
    assert not _identical(a, c)


@pytest.mark.slow
def test_pong_same_seed_same_weights(tmp_path):
    a = _final_weights(tmp_path, "a", [*PONG, "--seed=3"])
    b = _final_weights(tmp_path, "b", [*PONG, "--seed=3"])
    assert _identical(a, b)
