"""CartPole-v1 whose `step` hangs once in a whole run: the first env past 300 steps that finds the
file named by the environment variable SURGE_TEST_HANG_ONCE removes it and sleeps for an hour in
`_hang_here`, as an emulator that stops answering would. Importing this module registers
`HangingCartPole-v0` (`--env=tests.hanging_env:HangingCartPole-v0`)."""

from __future__ import annotations

import os
import time

import gymnasium as gym

MARKER_ENV = "SURGE_TEST_HANG_ONCE"


def _hang_here() -> None:
    time.sleep(3600)


class HangOnce(gym.Wrapper):
    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.steps = 0

    def step(self, action):
        self.steps += 1
        marker = os.environ.get(MARKER_ENV)
        if self.steps > 300 and marker:
            try:
                os.unlink(marker)  # atomic: one env of one process wins
            except FileNotFoundError:
                pass
            else:
                _hang_here()
        return self.env.step(action)


def _make(**kwargs) -> gym.Env:
    return HangOnce(gym.make("CartPole-v1", **kwargs))


if "HangingCartPole-v0" not in gym.registry:
    gym.register("HangingCartPole-v0", entry_point=_make)
