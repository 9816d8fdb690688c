"""What a Box action space's env receives from the policy (`--clip_actions`, `--rescale_actions`).

- clip_actions=True, rescale_actions=False (surge's default): the sampled action is clipped to the
  space's bounds.
- rescale_actions=True: the action is first clamped to [-1, 1] (when clip_actions) and then mapped
  onto the bounds, `a * (high - low) / 2 + (high + low) / 2`: rl_games 1.6.5's
  `A2CAgent.preprocess_actions` with `clip_actions: True` (common/a2c_common.py, `rescale_actions`).
- clip_actions=False, rescale_actions=False: the sampled action goes to the env unchanged
  (rl_games' `clip_actions: False`).
The same mapping is used by the rollout workers and by `surge enjoy`.
"""

from __future__ import annotations

import numpy as np


class BoxActionMap:
    """The mapping of the module docstring for one Box space.

    Args:
        low, high: the space's bounds, any shape (flattened here), finite when `rescale`.
        clip, rescale: `--clip_actions`, `--rescale_actions`.
    """

    def __init__(self, low: np.ndarray, high: np.ndarray, clip: bool, rescale: bool):
        # the space's own dtype, as surge clipped before these flags (no per-step conversion)
        self.low, self.high = np.asarray(low).reshape(-1), np.asarray(high).reshape(-1)
        self.clip, self.rescale = clip, rescale
        lo, hi = self.low.astype(np.float64), self.high.astype(np.float64)
        self.half_range = ((hi - lo) / 2.0).astype(np.float32)
        self.mid = ((hi + lo) / 2.0).astype(np.float32)

    def __call__(self, actions: np.ndarray) -> np.ndarray:
        """`actions` `[N, action_dim]` float32 (flattened action dims) -> `[N, action_dim]` (float32
        when rescaled; clipped: numpy's promotion with the bounds' dtype, float32 for float32 spaces)."""
        if self.rescale:
            if self.clip:
                actions = np.clip(actions, -1.0, 1.0)
            return (actions * self.half_range + self.mid).astype(np.float32, copy=False)
        if self.clip:
            return np.clip(actions, self.low, self.high)
        return actions
