"""`torchrun --standalone --nnodes=1 --nproc_per_node=2 -m surge.train` on CartPole (gloo on the
CPU), serial and async placements: the run finishes, both ranks end with the same weights, and
only rank 0 wrote in the experiment folder.

The ranks' final weights are compared through the checksum each rank logs when it leaves the
process group (rank 0 in the experiment folder's log, rank 1 in `<experiment>_rank1/`): both must
equal the checksum of the model in rank 0's final checkpoint, computed here from the file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from surge.runtime.data_parallel import weights_checksum

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
CHECKSUM = re.compile(r"rank (\d+) stopped after (\d+) round\(s\).*final weights checksum ([-0-9.e+]+)")


def _torchrun(tmp_path: Path, *flags: str, nproc: int = 2, timeout: int = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parents[2])}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    cmd = [
        *TORCHRUN,
        "--standalone",
        "--nnodes=1",
        f"--nproc_per_node={nproc}",
        "-m",
        "surge.train",
        "--env=cartpole",
        "--experiment=exp",
        f"--train_dir={tmp_path}",
        "--num_workers=1",
        "--num_envs_per_worker=2",
        "--num_torch_threads=1",
        "--seed=3",
        *flags,
    ]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def _checksums(log: Path) -> dict[int, tuple[int, float]]:
    return {int(m[1]): (int(m[2]), float(m[3])) for m in CHECKSUM.finditer(log.read_text())}


@pytest.mark.slow
def test_two_ranks_serial_same_weights_rank0_writes(tmp_path):
    r = _torchrun(tmp_path, "--serial_mode=True", "--train_for_env_steps=4000")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    exp, rank1 = tmp_path / "exp", tmp_path / "exp_rank1"
    assert (exp / "done").exists() and (exp / "cfg.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp", "exp_rank1"]
    assert [p.name for p in rank1.iterdir()] == ["surge_log.txt"]  # rank 1 wrote only its log
    ckpts = sorted((exp / "checkpoint_p0").glob("checkpoint_*.pth"))
    assert ckpts
    state = torch.load(ckpts[-1], weights_only=True)
    # the global budget is split: rank 0 sampled its half
    assert 2000 <= state["env_frames"] < 4000 and state["learner"]["policy_version"] > 0

    (rounds0, sum0), (rounds1, sum1) = (
        _checksums(exp / "surge_log.txt")[0],
        _checksums(rank1 / "surge_log.txt")[1],
    )
    assert rounds0 == rounds1 > 0
    assert sum0 == sum1 == weights_checksum(state["model"])
    log0 = (exp / "surge_log.txt").read_text()
    assert "Data parallel, 2 ranks: all ranks together" in log0


@pytest.mark.slow
def test_two_ranks_async_same_weights_rank0_writes(tmp_path):
    """The async placement: the process group lives in each rank's learner process."""
    r = _torchrun(
        tmp_path,
        "--serial_mode=False",
        "--decorrelate_experience_max_seconds=0",
        "--train_for_env_steps=6000",
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    exp, rank1 = tmp_path / "exp", tmp_path / "exp_rank1"
    assert (exp / "done").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["exp", "exp_rank1"]
    assert [p.name for p in rank1.iterdir()] == ["surge_log.txt"]
    assert list((exp / "checkpoint_p0").glob("checkpoint_*.pth"))
    (rounds0, sum0), (rounds1, sum1) = (
        _checksums(exp / "surge_log.txt")[0],
        _checksums(rank1 / "surge_log.txt")[1],
    )
    assert rounds0 == rounds1 > 0 and sum0 == sum1
