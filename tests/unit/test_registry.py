"""Env registry: families by prefix, exact names, gymnasium ids, multi-agent wrapping."""

import gymnasium as gym
import numpy as np
import pytest

from surge.cfg.cli import parse_cfg
from surge.envs.registry import find_family, make_env, register_env_family
from surge.errors import ConfigError


def test_builtin_families_and_gym_ids_resolve():
    assert find_family("atari_breakout").prefix == "atari_"
    assert find_family("cartpole").exact
    assert find_family("Acrobot-v1").prefix == ""  # plain gymnasium id


def test_unknown_env_suggests_close_names():
    with pytest.raises(ConfigError, match="CartPole-v1"):
        find_family("CartPole-v2x")


class _Counter(gym.Env):
    observation_space = gym.spaces.Box(0, 100, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, horizon):
        self.horizon, self.t = horizon, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], np.float32), 1.0, self.t >= self.horizon, False, {}


def test_user_family_with_extra_params_and_overrides(tmp_path):
    from dataclasses import dataclass

    from surge.cfg.config import family_params, param

    @dataclass
    class CounterParams:
        counter_horizon: int = param(3, "Episode length of the counter env.")

    register_env_family(
        "counter_",
        lambda name, cfg, render_mode=None: _Counter(family_params(cfg, CounterParams).counter_horizon),
        extra_params=CounterParams,
        default_overrides={"use_rnn": False, "recurrence": 1, "with_vtrace": False},
    )
    cfg = parse_cfg(["--env=counter_a", "--counter_horizon=2", f"--train_dir={tmp_path}"])
    assert family_params(cfg, CounterParams).counter_horizon == 2 and cfg.use_rnn is False
    assert cfg.to_dict()["counter_horizon"] == 2  # cfg.json stays flat
    env = make_env(cfg)
    assert env.num_agents == 1
    obs, infos = env.reset(seed=0)
    assert len(obs) == 1 and isinstance(infos, list)
    env.step([0])
    obs, rew, term, trunc, infos = env.step([1])
    # auto-reset: the episode ended, the returned obs starts the next one, and its stats are reported
    assert term == [True] and obs[0][0] == 0.0
    assert infos[0]["episode"]["r"] == 2.0 and infos[0]["episode"]["l"] == 2
