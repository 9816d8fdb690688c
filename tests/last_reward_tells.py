"""`LastRewardTells-v0` (`--env=tests.last_reward_tells:LastRewardTells-v0`, registered on
import, so the async placement's processes make it too): a task that only the previous reward
solves, for `--use_prev_action_reward` (tests/learning/test_prev_action_reward.py).

Two actions; at each of an episode's `EPISODE` steps one pays +1 and the other -1, and which one
pays is told by the previous step's reward: action 1 after a +1, action 0 after a -1 (at the first
step, drawn at random). The observation is a constant, so it says nothing. A policy that reads
the previous reward earns 9 on average (the first step is a coin toss); any policy that does not
earns 0 (chance): flipping the first step's draw flips the sign of every later reward of a fixed
action sequence.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

EPISODE = 10


class LastRewardTells(gym.Env):
    """The paying action (+1, the other -1) is 1 after a +1, 0 after a -1, drawn at the first
    step; `EPISODE` steps (then truncated); the observation is always `[0.0]` float32."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.paying, self.t = int(self.np_random.integers(2)), 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        right = int(action) == self.paying
        self.paying = 1 if right else 0
        return np.zeros(1, np.float32), 1.0 if right else -1.0, False, self.t >= EPISODE, {}


gym.register("LastRewardTells-v0", entry_point=LastRewardTells)
