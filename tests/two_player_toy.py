"""A tiny two-player zero-sum game for the self-play tests: both players pick a number in 0..2 at
once; the higher number wins (+1 / -1), equal numbers draw (0). One step per game. Importing this
module registers it as `--env=higher_number`."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from surge.envs.registry import register_env


class HigherNumber:
    """Multi-agent contract of `surge.envs.multi_agent` (two agents, auto-reset)."""

    num_agents = 2
    is_multiagent = True
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self) -> None:
        self.render_mode = None

    def _obs(self) -> list[np.ndarray]:
        return [np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)]

    def reset(self, seed=None):
        return self._obs(), [{}, {}]

    def step(self, actions):
        a, b = int(actions[0]), int(actions[1])
        r = float(np.sign(a - b))
        rewards = [r, -r]
        infos = [{"episode": {"r": rewards[i], "l": 1}} for i in range(2)]
        return self._obs(), rewards, [True, True], [False, False], infos

    def close(self) -> None:
        pass


register_env("higher_number", lambda name, cfg, render_mode=None: HigherNumber())
