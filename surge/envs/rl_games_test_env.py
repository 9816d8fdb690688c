"""rl_games' own memory test env, `TestRnnEnv-v0` (`rl_games/envs/test/rnn_env.py`, class
`TestRNNEnv`), as the surge env `rl_games_test_rnn`: rl_games' class itself, run through
gymnasium's API (it has the old one: `reset() -> obs`, `step -> (obs, reward, done, info)`).

The task: from (0, 0) on a grid, reach a goal 2..8 cells away per axis within `max_steps` (21)
steps; the goal is shown (observation entries 2-3) at every step or, with `hide_object`, in the
reset's observation only, so that the policy must remember it (the first step's action is
ignored). Reward 1 at the goal (and with
`apply_dist_reward` -0.1 x the L1 distance / max_dist at every step); the episode ends at the
goal or at `max_steps`. Observation `Box(-inf, inf, (6,), float32)` (position, goal, shown flag,
step count; rl_games declares Box(0, 1), which its values leave); actions `Discrete(4)`, or
`Tuple(Discrete(2), Discrete(3))` with `multi_discrete_space`. With `use_central_value` the
observation is `Dict(obs=..., state=...)`, the state the observation with the goal always shown
(surge's `--central_value` reads the same two keys).

rl_games' class draws its goals from numpy's global generator: `reset(seed=s)` seeds that
generator (`np.random.seed(s)`), the only way to seed it. rl_games ends an episode at `max_steps`
without a time-out flag, so its trainer treats it as terminal; this env reports it as terminated
too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from surge.cfg.config import Config, family_params, param
from surge.envs.registry import register_env
from surge.errors import ConfigError, EnvError

NAME = "rl_games_test_rnn"


@dataclass
class RlGamesTestRnnParams:
    """Flags of `rl_games_test_rnn`: `TestRNNEnv`'s keyword arguments (rl_games' defaults)."""

    rnn_env_hide_object: bool = param(False, "The goal is shown at the reset only (a memory task).")
    rnn_env_min_dist: int = param(2, "Fewest cells to the goal per axis.")
    rnn_env_max_dist: int = param(8, "Most cells to the goal per axis.")
    rnn_env_max_steps: int = param(21, "Steps per episode at most.")
    rnn_env_apply_dist_reward: bool = param(
        False, "Adds -0.1 x L1 distance / max_dist to every step's reward."
    )
    rnn_env_multi_discrete_space: bool = param(
        False, "Actions Tuple(Discrete(2), Discrete(3)) instead of Discrete(4)."
    )
    rnn_env_use_central_value: bool = param(
        False, "Observations {'obs', 'state'} for --central_value: the state is the unhidden observation."
    )

    def validate(self) -> None:
        """Raises `ConfigError` for distances or a step count out of range."""
        if not 1 <= self.rnn_env_min_dist <= self.rnn_env_max_dist:
            raise ConfigError(
                "rnn_env_min_dist",
                f"need 1 <= rnn_env_min_dist ({self.rnn_env_min_dist}) <= rnn_env_max_dist "
                f"({self.rnn_env_max_dist}).",
                "pass e.g. --rnn_env_min_dist=2 --rnn_env_max_dist=8.",
            )
        if self.rnn_env_max_steps < 2:
            raise ConfigError(
                "rnn_env_max_steps",
                f"must be >= 2, got {self.rnn_env_max_steps} (the env ignores the first step's action).",
                "pass e.g. --rnn_env_max_steps=21.",
            )


class RlGamesTestRnn(gym.Env):
    """rl_games' `TestRNNEnv(**kwargs)` with gymnasium's API (module docstring). `step(action)`
    takes an int (`Discrete(4)`) or a pair (`Tuple`); rewards are float."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, **kwargs: Any):
        try:
            from rl_games.envs.test.rnn_env import TestRNNEnv
        except ImportError as e:
            raise EnvError(f"{NAME} is rl_games' own test env: pip install rl-games") from e
        self.env = TestRNNEnv(**kwargs)
        # rl_games' Box(0, 1) does not hold the values (cells -8..8, the step count): the true bounds
        box = gym.spaces.Box(-np.inf, np.inf, self.env.observation_space.shape, np.float32)
        self.observation_space: gym.Space = box
        if kwargs.get("use_central_value"):  # rl_games' class returns the dict but keeps the Box space
            self.observation_space = gym.spaces.Dict({"obs": box, "state": box})
        self.action_space = self.env.action_space

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)  # gymnasium's own generator (unused by rl_games' class)
        if seed is not None:
            np.random.seed(seed)  # TestRNNEnv draws its goals from numpy's global generator
        return self.env.reset(), {}

    def step(self, action):
        obs, reward, done, info = self.env.step(action)
        return obs, float(reward), bool(done), False, {}


def make_rl_games_test_rnn(full_env_name: str, cfg: Config, render_mode: str | None = None) -> RlGamesTestRnn:
    """The env with the section `cfg.env_params` (`RlGamesTestRnnParams`).

    Raises:
        EnvError: rl_games is not installed.
    """
    p = family_params(cfg, RlGamesTestRnnParams)
    return RlGamesTestRnn(
        hide_object=bool(p.rnn_env_hide_object),
        min_dist=int(p.rnn_env_min_dist),
        max_dist=int(p.rnn_env_max_dist),
        max_steps=int(p.rnn_env_max_steps),
        apply_dist_reward=bool(p.rnn_env_apply_dist_reward),
        multi_discrete_space=bool(p.rnn_env_multi_discrete_space),
        use_central_value=bool(p.rnn_env_use_central_value),
    )


register_env(NAME, make_rl_games_test_rnn, extra_params=RlGamesTestRnnParams)
