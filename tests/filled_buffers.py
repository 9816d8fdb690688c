"""Trajectory buffers with every field filled with random values (no NaN left), for tests that
compare ways of reading them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

import surge.app.builtins  # noqa: F401 - registers the built-in algorithms (APPO)
from surge.data.trajectory import TrajectoryBuffers
from surge.learning.algorithm import get_algorithm


def filled_buffers(
    num_slots: int, rollout: int = 4, img: tuple[int, ...] = (3, 4, 5), seed: int = 0
) -> TrajectoryBuffers:
    """APPO's buffers for a Dict observation (`img` uint8 of shape `img`, `v` float32 `[2]`),
    Discrete(3) actions and an 8-wide recurrent state; every field random, cast to its dtype."""
    obs_space = gym.spaces.Dict(
        {"img": gym.spaces.Box(0, 255, img, np.uint8), "v": gym.spaces.Box(-1, 1, (2,), np.float32)}
    )
    actions = gym.spaces.Discrete(3)
    buf = TrajectoryBuffers(
        num_slots, rollout, obs_space, actions, 8, get_algorithm("APPO").step_fields(actions)
    )
    g = torch.Generator().manual_seed(seed)
    for t in [buf.obs["img"], buf.obs["v"], *(getattr(buf, n) for n in buf.FIELDS if n != "obs")]:
        t.copy_((torch.rand(t.shape, generator=g) * 100).to(t.dtype))
    return buf
