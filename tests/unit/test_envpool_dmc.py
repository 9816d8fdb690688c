"""The `envpool_dmc_` family (EnvPool's dm_control suite tasks, batched) against EnvPool itself and
rl_games' flattening of their dict observation (`rl_games/envs/envpool.py`), and its names."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.envs.envpool_dmc import DMC_TASK_IDS, DMC_TASKS, dmc_env_name
from surge.envs.registry import make_env
from surge.errors import ConfigError

pytestmark = pytest.mark.skipif(importlib.util.find_spec("envpool") is None, reason="envpool not installed")


def _cfg(*args: str):
    return parse_cfg(["--train_dir=/tmp/unused", "--seed=3", *args])


def test_the_task_table_is_envpools_dm_control_suite():
    from envpool.registration import registry

    dmc = {k for k, (module, _, _) in registry.specs.items() if module == "envpool.mujoco.dmc"}
    assert set(DMC_TASK_IDS) == dmc
    assert len(DMC_TASKS) == len(DMC_TASK_IDS)  # the names are one-to-one


@pytest.mark.parametrize(
    "task,name",
    [
        ("CheetahRun-v1", "envpool_dmc_cheetah_run"),
        ("BallInCupCatch-v1", "envpool_dmc_ball_in_cup_catch"),
        ("HumanoidCMURun-v1", "envpool_dmc_humanoid_cmu_run"),
        ("SwimmerSwimmer15-v1", "envpool_dmc_swimmer_swimmer15"),
    ],
)
def test_names(task, name):
    assert dmc_env_name(task) == name and DMC_TASKS[name] == task


def test_an_unknown_task_is_refused_with_the_closest_names():
    with pytest.raises(ConfigError) as e:
        _cfg("--env=envpool_dmc_cheetah_rn")
    assert e.value.field == "env" and "envpool_dmc_cheetah_run" in e.value.fix


def test_a_bad_episode_length_is_refused():
    with pytest.raises(ConfigError) as e:
        _cfg("--env=envpool_dmc_cheetah_run", "--dmc_max_episode_steps=0")
    assert e.value.field == "dmc_max_episode_steps"


def _rl_games_flatten(obs: dict) -> np.ndarray:
    # rl_games/envs/envpool.py's flatten_dict: the dict's entries in order, each [N, -1]
    return np.column_stack([v.reshape(v.shape[0], -1) for v in obs.values()])


def test_spaces_steps_and_episodes_are_envpools_flattened():
    import envpool

    n, steps = 3, 5
    env = make_env(
        _cfg("--env=envpool_dmc_cheetah_run", f"--env_agents={n}", f"--dmc_max_episode_steps={steps}")
    )
    ref = envpool.make(
        "CheetahRun-v1",
        env_type="gymnasium",
        num_envs=n,
        batch_size=n,
        num_threads=1,
        seed=3,
        max_episode_steps=steps,
    )
    assert env.is_batched and env.num_agents == n
    # cheetah: 8 positions + 9 velocities; 6 actuators in [-1, 1]
    assert env.observation_space.shape == (17,) and env.observation_space.dtype == np.float32
    assert env.action_space.shape == (6,) and env.action_space.dtype == np.float32
    assert (env.action_space.low == -1).all() and (env.action_space.high == 1).all()
    obs, _ = env.reset()
    ref_obs, _ = ref.reset()
    assert obs.shape == (n, 17) and obs.dtype == np.float32
    np.testing.assert_array_equal(obs, _rl_games_flatten(ref_obs).astype(np.float32))
    rng = np.random.default_rng(0)
    total = np.zeros(n)
    for t in range(steps + 2):
        a = rng.uniform(-1, 1, (n, 6)).astype(np.float32)
        obs, rew, term, trunc, info = env.step(a)
        ref_obs, ref_rew, ref_term, ref_trunc, _ = ref.step(a.astype(np.float64))
        np.testing.assert_array_equal(obs, _rl_games_flatten(ref_obs).astype(np.float32))
        np.testing.assert_array_equal(rew, ref_rew.astype(np.float32))
        if t < steps:
            total += ref_rew
        if t == steps - 1:  # the time limit: every episode ends, with the sum of its rewards
            assert trunc.all() and not term.any()
            assert sorted(i for i, _, _ in info.episodes) == list(range(n))
            np.testing.assert_allclose([r for _, r, _ in info.episodes], total, rtol=1e-6)
            assert all(length == steps for _, _, length in info.episodes)
        elif t == steps:  # EnvPool's reset step: not trained on, a boundary, no episode
            assert info.inactive is not None and info.inactive.all()
            assert term.all() and not trunc.any() and not info.episodes
        else:
            assert info.inactive is None and not (term | trunc).any() and not info.episodes
    env.close()
