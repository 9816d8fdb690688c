"""An env that raises in every reset (deterministically) ends an async `surge train` at once with
its error reported once and a non-zero exit, rather than workers replaced again and again, each
repeating the same traceback."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MODULE = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np


    class MissingLevel(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            raise RuntimeError("level file levels/maze.txt not found")

        def step(self, action):
            raise AssertionError("never reached")


    gym.register("MissingLevel-v0", entry_point=MissingLevel)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("num_workers", [1, 2])
def test_an_env_failing_in_every_reset_stops_the_run_with_its_error_once(tmp_path, num_workers):
    (tmp_path / "surge_broken_envs.py").write_text(MODULE)
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        "--env=surge_broken_envs:MissingLevel-v0",
        f"--train_dir={tmp_path}",
        "--experiment=broken",
        f"--num_workers={num_workers}",
        "--num_envs_per_worker=2",
        "--train_for_env_steps=10000",
        "--set_workers_cpu_affinity=False",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    # one traceback: the first failure's; a replacement failing the same way ends the run
    assert out.count("Traceback (most recent call last)") == 1, out[-6000:]
    stop = [line for line in out.splitlines() if "Stopping:" in line]
    assert len(stop) == 1 and "RuntimeError: level file levels/maze.txt not found" in stop[0], out[-3000:]
    assert "same error" in stop[0] and "giving up" not in out, out[-3000:]
    assert time.monotonic() - started < 120
