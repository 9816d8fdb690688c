"""The `surge` console script imports an env module of the current folder, as `python -m surge.train`
does (issue 55, item 7): `surge check-env --env=my_module:MyEnv-v0` and `surge train` with that env,
run from the module's folder, both work. A console script's `sys.path` starts with the
environment's `bin/`, not the current folder, so this failed with "No module named ..." before."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("surge")  # what `pip install -e .` puts next to python

# the env class lives in the module itself: the async placement's workers must import the module
# to make the env, so the training run also shows that its children find the current folder
MODULE = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np


    class Walk(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return np.zeros(3, np.float32), {}

        def step(self, action):
            self.t += 1
            return np.full(3, 0.1 * int(action), np.float32), float(action), self.t >= 20, False, {}


    gym.register("SurgeCwdWalk-v0", entry_point="surge_cwd_env:Walk")
    """
)


def _surge(folder: Path, *args: str, timeout: float) -> subprocess.CompletedProcess:
    # the checkout's surge first, as the console script of an editable install of it would have
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [str(SCRIPT), *args], cwd=folder, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
@pytest.mark.skipif(not SCRIPT.exists(), reason=f"no `surge` console script at {SCRIPT} (pip install -e .)")
def test_the_console_script_checks_and_trains_an_env_module_of_the_current_folder(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "surge_cwd_env.py").write_text(MODULE)

    check = _surge(folder, "check-env", "--env=surge_cwd_env:SurgeCwdWalk-v0", timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr[-3000:]
    assert "No module named" not in check.stdout + check.stderr

    # the default async placement: a rollout worker, an inference worker and a learner import the env
    # fmt: off
    train = _surge(folder, "train", "--env=surge_cwd_env:SurgeCwdWalk-v0", "--experiment=cwd",
                   f"--train_dir={tmp_path / 'train_dir'}", "--train_for_env_steps=400", "--num_workers=1",
                   "--num_envs_per_worker=2", "--decorrelate_experience_max_seconds=0",
                   "--set_workers_cpu_affinity=False", timeout=300)
    # fmt: on
    assert train.returncode == 0, train.stderr[-3000:]
    assert (tmp_path / "train_dir" / "cwd" / "done").exists(), train.stderr[-3000:]
