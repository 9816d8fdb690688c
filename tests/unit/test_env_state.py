"""Saving an env's whole state (`surge.sampling.env_state`): restored envs step exactly as the
originals would; envs whose pickle would silently make a fresh env are refused."""

import numpy as np
import pytest

from surge.cfg.cli import parse_cfg
from surge.envs.registry import make_env
from surge.sampling.env_state import EnvStateUnsupported, load_env_state, save_env_state


def _steps_alike(env, restored, steps: int) -> None:
    for i in range(steps):
        action = [env.action_space.sample()]
        a, b = env.step(action), restored.step(action)
        assert np.array_equal(a[0][0], b[0][0]), f"step {i}: observations differ"
        assert a[1:4] == b[1:4], f"step {i}: reward or episode end differs"


@pytest.mark.parametrize("name,steps", [("cartpole", 2000), ("pendulum", 500), ("atari_breakout", 400)])
def test_a_restored_env_continues_as_the_original(name, steps):
    if name.startswith("atari"):
        pytest.importorskip("ale_py")
    env = make_env(parse_cfg([f"--env={name}"]))
    env.reset(seed=5)
    env.action_space.seed(5)
    for _ in range(37):  # in the middle of an episode (and its random generator's stream)
        env.step([env.action_space.sample()])
    restored = load_env_state(save_env_state(env))
    _steps_alike(env, restored, steps)  # episode ends and seeded-generator resets included
    env.close()
    restored.close()


def test_an_ezpickle_env_is_refused_naming_why():
    pytest.importorskip("mujoco")
    env = make_env(parse_cfg(["--env=mujoco_halfcheetah"]))
    with pytest.raises(EnvStateUnsupported, match="EzPickle"):
        save_env_state(env)
    env.close()
