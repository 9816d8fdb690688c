"""Learning test: two data-parallel ranks (`torchrun --standalone --nproc_per_node=2`, gloo on
the CPU, serial placement) solve CartPole-v1 with the hyper-parameters of test_cartpole.py within
120k env frames of both ranks together. Deterministic evaluation of rank 0's final checkpoint must
average >= 475. The 300k-frame run, and the command, are in docs/distributed.md
(benchmarks/ddp_cartpole.py)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.enjoy import enjoy
from tests.play_checkpoint import CARTPOLE_SOLVED_EPISODES

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from ddp_cartpole import HYPERPARAMS  # noqa: E402


@pytest.mark.slow
def test_two_ranks_reach_475_on_cartpole(tmp_path):
    args = ["--env=CartPole-v1", "--experiment=cp", f"--train_dir={tmp_path}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1", "--nproc_per_node=2",
        "-m", "surge.train", *args, "--serial_mode=True", *HYPERPARAMS, "--train_for_env_steps=120000",
    ]  # fmt: skip
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "cp" / "done").exists()
    ev = parse_cfg(
        [
            *args,
            f"--max_num_episodes={CARTPOLE_SOLVED_EPISODES}",
            "--no_render=True",
            "--eval_deterministic=True",
        ],
        evaluation=True,
    )
    returns = enjoy(ev)["returns"]
    assert np.mean(returns) >= 475, returns
