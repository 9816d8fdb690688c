"""Velocity masking: a fully observed control task made partially observable by zeroing the
velocity entries of its observation, so that a policy must infer them from memory (an RNN).

rl_games 1.6.5's `MaskVelocityWrapper` (`rl_games/common/wrappers.py`) is the reference: it
multiplies the observation by a 0/1 mask per task, and rl_games registers `CartPoleMaskedVelocity-v1`
as `MaskVelocityWrapper(make('CartPole-v1'), 'CartPole-v1')` (`common/env_configurations.py`).
Usable from the command line: `--env=CartPole-v1 --env_wrappers
surge.envs.masked_velocity:MaskCartPoleVelocity`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

#: 1 keeps an entry, 0 zeroes it: rl_games' masks, by the gymnasium id of the task (its
#: Pendulum-v0 and LunarLander*-v2 are gymnasium's Pendulum-v1 and LunarLander*-v3, same layout)
VELOCITY_MASKS: dict[str, tuple[float, ...]] = {
    # x, x_dot, theta, theta_dot
    "CartPole-v1": (1.0, 0.0, 1.0, 0.0),
    # cos, sin, theta_dot
    "Pendulum-v1": (1.0, 1.0, 0.0),
    # x, y, vx, vy, angle, angular velocity, leg contacts
    "LunarLander-v3": (1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0),
    "LunarLanderContinuous-v3": (1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0),
}


class MaskVelocity(gym.ObservationWrapper):
    """Zeroes the velocity entries of the observation (`VELOCITY_MASKS[task]`); the observation
    space is unchanged (a masked entry is always 0, within the task's bounds).

    Raises:
        ValueError: no mask for `task`, or the observation is not a vector of the mask's length.
    """

    task: ClassVar[str] = ""

    def __init__(self, env: gym.Env, task: str | None = None):
        super().__init__(env)
        name = task or self.task
        if name not in VELOCITY_MASKS:
            raise ValueError(f"no velocity mask for {name!r}; masks exist for {sorted(VELOCITY_MASKS)}")
        space = env.observation_space
        mask = VELOCITY_MASKS[name]
        if not isinstance(space, gym.spaces.Box) or space.shape != (len(mask),):
            raise ValueError(f"{name}'s velocity mask needs a Box of shape ({len(mask)},), got {space}")
        # the observation's own dtype, so the mask adds no conversion per step
        self._mask = np.asarray(mask, dtype=space.dtype)

    def observation(self, observation: Any) -> Any:
        return observation * self._mask


class MaskCartPoleVelocity(MaskVelocity):
    """CartPole-v1 without the cart's and the pole's velocities (rl_games' `CartPoleMaskedVelocity-v1`)."""

    task = "CartPole-v1"
