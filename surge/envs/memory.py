"""A task that needs memory: a cue shown once, an answer asked for many steps later.

`--env=memory_cue` (delay set by `--memory_delay`, default 5). It is the smallest test of a
recurrent core end to end: acting must carry the hidden state from step to step, learning must
back-propagate through the delay, and a feed-forward policy cannot do better than chance.

Episode (fixed length `memory_delay + 2` env steps, always `terminated` at the end, never truncated):

- step 0: the observation shows the cue c ∈ {0, 1} (uniformly random): `[c == 0, c == 1, 0]`;
- steps 1 .. memory_delay: blank observations `[0, 0, 0]`;
- step memory_delay + 1: the query `[0, 0, 1]`; the action taken on it is the answer.

Spaces: observation `Box(0, 1, (3,), float32)`; action `Discrete(2)`. Reward: +1 when the answer
equals the cue, -1 otherwise, 0 for every action before the query (which is ignored).
Returns therefore lie in {-1, +1}: a policy that has not seen the cue (any feed-forward policy)
is right half the time, so its expected return, the chance level, is **0**; a perfect policy gets 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from surge.cfg.config import Config, family_params, param
from surge.envs.registry import register_env
from surge.errors import ConfigError

#: the expected episode return of any policy that cannot remember the cue
CHANCE_RETURN = 0.0


class CueMemoryEnv(gym.Env):
    """See the module docstring. `delay`: blank steps between the cue and the query (>= 0)."""

    metadata = {"render_modes": []}
    observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, delay: int = 5):
        if delay < 0:
            raise ValueError(f"memory_delay must be >= 0, got {delay}")
        self.delay = delay
        self.cue = 0
        self.t = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(3, np.float32)
        if self.t == 0:
            obs[self.cue] = 1.0
        elif self.t == self.delay + 1:
            obs[2] = 1.0
        return obs

    def reset(self, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.cue = int(self.np_random.integers(2))
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any):
        if self.t == self.delay + 1:
            reward = 1.0 if int(action) == self.cue else -1.0
            self.t += 1
            return np.zeros(3, np.float32), reward, True, False, {}
        self.t += 1
        return self._obs(), 0.0, False, False, {}


@dataclass
class MemoryParams:
    """Parameters of the memory_cue env."""

    memory_delay: int = param(5, "memory_cue: blank steps between the cue and the query.")

    def validate(self) -> None:
        """Raises `ConfigError` for a negative delay."""
        if self.memory_delay < 0:
            raise ConfigError(
                "memory_delay", f"must be >= 0 steps, got {self.memory_delay}.", "e.g. --memory_delay=5."
            )


#: a small recurrent policy. rollout = recurrence = episode length (memory_delay + 2 = 7 at the
#: default delay) with `--decorrelate_envs_on_one_worker=False`: every trajectory is then one whole
#: episode, back-propagated through from the query to the cue in a single BPTT chunk (and, with
#: no episode end inside a chunk, the learner runs the core over the chunk in one call). Batches of
#: 64 whole episodes, 2 epochs at lr 3e-3: these reach 0.9 after 19-31k frames (GRU and LSTM, seeds
#: 1-3, tests/learning/test_memory.py); Sample Factory's batch of 1024 is not a whole number of
#: 7-step trajectories and its lr 1e-4 stays near chance on that budget.
MEMORY_DEFAULTS = {
    "encoder_type": "mlp",
    "encoder_subtype": "mlp",
    "encoder_mlp_layers": [32],
    "hidden_size": 32,
    "use_rnn": True,
    "rollout": 7,
    "recurrence": 7,
    "decorrelate_envs_on_one_worker": False,
    "nonlinearity": "tanh",
    "num_envs_per_worker": 16,
    "batch_size": 448,
    "ppo_epochs": 2,
    "learning_rate": 0.003,
}


def make_memory_env(full_env_name: str, cfg: Config, render_mode: str | None = None) -> gym.Env:
    """Makes `memory_cue` with `memory_delay` blank steps (the section `cfg.env_params`)."""
    return CueMemoryEnv(int(family_params(cfg, MemoryParams).memory_delay))


register_env("memory_cue", make_memory_env, extra_params=MemoryParams, default_overrides=MEMORY_DEFAULTS)
