"""The model's side of `--use_prev_action_reward` (rlpyt's `prev_action, prev_reward`): the
observation's `prev_action` and `prev_reward` entries (`surge.envs.prev_action_reward`) are taken
out before the normaliser and the encoder see it, and concatenated to the encoder's output before
the core, as rlpyt's AtariLstmModel and R2D1 model do (`torch.cat([conv_out, prev_action_onehot,
prev_reward], dim=-1)` into the LSTM).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from surge.envs.prev_action_reward import OBS_KEY, PREV_ACTION_KEY, PREV_KEYS, PREV_REWARD_KEY


def split_prev_space(space: gym.Space) -> tuple[gym.Space, int]:
    """`(the encoder's observation space, the width of the extra features)`: `space` without the
    `prev_action` and `prev_reward` entries (the bare `obs` entry's space when it alone is left),
    and A + 1 (the action's width and the reward); `(space, 0)` when it has no such entries."""
    if not (isinstance(space, gym.spaces.Dict) and PREV_ACTION_KEY in space.spaces):
        return space, 0
    rest = {k: s for k, s in space.spaces.items() if k not in PREV_KEYS}
    width = sum(int(np.prod(space.spaces[k].shape or ())) for k in PREV_KEYS)
    return (rest[OBS_KEY] if list(rest) == [OBS_KEY] else gym.spaces.Dict(rest)), width


def split_prev(obs: dict[str, Tensor]) -> tuple[Any, Tensor]:
    """`(the encoder's observation, extra features)` of a batch `{name: [*lead, ...]}`: without the
    two entries (the bare `obs` tensor when it alone is left), and `[*lead, A + 1]` float32, the
    previous action then the previous reward."""
    rest = {k: v for k, v in obs.items() if k not in PREV_KEYS}
    prev = torch.cat([obs[PREV_ACTION_KEY].float(), obs[PREV_REWARD_KEY].float()], dim=-1)
    return (rest[OBS_KEY] if list(rest) == [OBS_KEY] else rest), prev


class StripPrev(nn.Module):
    """An observation normaliser that is updated with stored observations, the two entries
    included (the learner's `_update_obs_normalizer`), and applied to observations without them."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def update(self, obs: dict[str, Tensor]) -> None:
        self.inner.update(split_prev(obs)[0])  # type: ignore[operator]

    def forward(self, obs: Any) -> Any:
        return self.inner(obs)
