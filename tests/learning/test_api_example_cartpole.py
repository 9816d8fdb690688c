"""Learning test of the Python API's example (issue 22, item 6): `examples/python_api.py`, run as a
user runs it, trains CartPole-v1 through `surge.train` and its own 10 episodes average >= 475; the
policy it leaves, loaded with `surge.load_policy` and played here on 10 other gymnasium episodes
(seeds 100-109), averages >= 475 too (500 is the maximum)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import surge

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_python_api_example_solves_cartpole(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, str(ROOT / "examples" / "python_api.py"), str(tmp_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    printed = out.stdout.splitlines()
    assert printed[0].startswith("done: "), out.stdout
    mean = float(printed[-1].split(": ")[1])
    assert mean >= 475, out.stdout

    policy = surge.load_policy(tmp_path / "python_api_cartpole")
    game = gym.make("CartPole-v1")
    returns = []
    for seed in range(100, 110):
        obs, _ = game.reset(seed=seed)
        state, total, done = policy.initial_state(), 0.0, False
        while not done:
            action, state = policy.act(obs, state)
            obs, reward, terminated, truncated, _ = game.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    assert np.mean(returns) >= 475, returns
