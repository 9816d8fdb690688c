"""Fault injection for testing how a run survives a flaky env (chaos testing): wrap any env with
`--env_wrappers=surge.envs.fault_injection:FlakyStep` and 1% of its `step` calls raise.

A rollout worker counts such a fault, ends the episode, rebuilds the env and goes on
(`surge.sampling.rollout_worker`); `benchmarks/fault_tolerance.py` measures it.
"""

from __future__ import annotations

import random
from typing import Any

import gymnasium as gym


class InjectedEnvFault(RuntimeError):
    """The exception `FlakyStep` raises in place of a step."""


class FlakyStep(gym.Wrapper):
    """Raises `InjectedEnvFault` from `step` with probability `fault_prob` (per call), before the
    wrapped env steps. The draws come from this wrapper's own `random.Random`, seeded by `reset`'s
    seed when one is given, so a seeded run faults at the same steps."""

    def __init__(self, env: gym.Env, fault_prob: float = 0.01):
        super().__init__(env)
        if not 0.0 <= fault_prob <= 1.0:
            raise ValueError(f"fault_prob must lie in [0, 1], got {fault_prob}")
        self.fault_prob = fault_prob
        self.rng = random.Random()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self.rng.seed(seed)
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        if self.rng.random() < self.fault_prob:
            raise InjectedEnvFault(f"injected fault (probability {self.fault_prob} per step)")
        return self.env.step(action)
