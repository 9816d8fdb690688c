"""Preallocated trajectory buffers: every field of every trajectory slot, `[num_slots, T(+1), ...]`.

One slot holds one agent's rollout of T = `cfg.rollout` steps. Rollout workers and inference write
into a slot by index `(slots, t)`; the learner reads whole slots. Messages carry slot indices only.
The tensors can live in shared memory (`share_memory()`), so the same layout serves the serial and
the multi-process placements. Float fields start as NaN so that a read of a never-written value
shows up at once.

Fields (S slots, T steps; obs and rnn_states have T+1 rows, the last being the bootstrap step):

==================  =========================  =========
field               shape                      dtype
==================  =========================  =========
obs                 [S, T+1, *obs_shape]       obs dtype (a dict of them for Dict spaces)
rnn_states          [S, T+1, state_size]       float32
actions             [S, T, *action_shape]      int64 / float32
behavior_log_probs  [S, T]                     float32
values              [S, T]                     float32 (behavior values)
action_logits       [S, T, num_logits]         float32
rewards             [S, T]                     float32
terminated          [S, T]                     bool
truncated           [S, T]                     bool
is_active           [S, T]                     bool
policy_version      [S, T]                     int64
==================  =========================  =========
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor

from surge.errors import EnvError
from surge.models.distributions import action_shape, num_action_logits

Tree = Any  # a Tensor or a dict of Trees


def tree_map(fn: Callable[[Tensor], Any], tree: Tree) -> Tree:
    """Applies `fn` to every tensor of a (possibly nested) dict of tensors."""
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    return fn(tree)


def tree_assign(dst: Tree, index: Any, src: Tree) -> None:
    """`dst[index] = src` for every tensor of a (possibly nested) dict of tensors."""
    if isinstance(dst, dict):
        for k in dst:
            tree_assign(dst[k], index, src[k])
    else:
        dst[index] = src


def _torch_dtype(np_dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(1, dtype=np_dtype)).dtype


def _obs_buffer(space: gym.Space, lead: tuple[int, ...]) -> Tree:
    if isinstance(space, gym.spaces.Dict):
        return {k: _obs_buffer(s, lead) for k, s in space.spaces.items()}
    if not isinstance(space, gym.spaces.Box):
        raise EnvError(f"observation space {space} is not supported: use Box or Dict of Box")
    dtype = _torch_dtype(space.dtype)
    buf = torch.zeros(*lead, *space.shape, dtype=dtype)
    if dtype.is_floating_point:
        buf.fill_(float("nan"))
    return buf


class TrajectoryBuffers:
    """The trajectory slots of one policy; see the module docstring for the fields."""

    FIELDS = (
        "obs",
        "rnn_states",
        "actions",
        "behavior_log_probs",
        "values",
        "action_logits",
        "rewards",
        "terminated",
        "truncated",
        "is_active",
        "policy_version",
    )

    def __init__(
        self, num_slots: int, rollout: int, obs_space: gym.Space, action_space: gym.Space, rnn_state_size: int
    ):
        S, T = num_slots, rollout
        self.num_slots, self.rollout = S, T
        a_shape, a_dtype = action_shape(action_space)
        nan = float("nan")
        self.obs = _obs_buffer(obs_space, (S, T + 1))
        self.rnn_states = torch.zeros(S, T + 1, rnn_state_size)
        self.actions = torch.zeros(S, T, *a_shape, dtype=a_dtype)
        self.behavior_log_probs = torch.full((S, T), nan)
        self.values = torch.full((S, T), nan)
        self.action_logits = torch.full((S, T, num_action_logits(action_space)), nan)
        self.rewards = torch.full((S, T), nan)
        self.terminated = torch.zeros(S, T, dtype=torch.bool)
        self.truncated = torch.zeros(S, T, dtype=torch.bool)
        self.is_active = torch.ones(S, T, dtype=torch.bool)
        self.policy_version = torch.zeros(S, T, dtype=torch.int64)

    def share_memory(self) -> TrajectoryBuffers:
        """Moves every tensor to shared memory (for the multi-process placement)."""
        for name in self.FIELDS:
            tree_map(lambda t: t.share_memory_(), getattr(self, name))
        return self

    def gather(self, slots: Tensor) -> dict[str, Tree]:
        """Copies whole trajectories: every field indexed by `slots` `[N]` int64 -> `[N, T(+1), ...]`."""
        return {name: tree_map(lambda t: t[slots], getattr(self, name)) for name in self.FIELDS}

    def start_next(self, old_slots: Tensor, new_slots: Tensor) -> None:
        """Carries the bootstrap step (obs and rnn state at T) of finished slots to row 0 of new ones."""
        T = self.rollout
        tree_assign(self.obs, (new_slots, 0), tree_map(lambda t: t[old_slots, T], self.obs))
        self.rnn_states[new_slots, 0] = self.rnn_states[old_slots, T]

    def nbytes(self) -> int:
        """Total size of all buffers in bytes."""
        total = 0
        for name in self.FIELDS:

            def add(t: Tensor) -> None:
                nonlocal total
                total += t.numel() * t.element_size()

            tree_map(add, getattr(self, name))
        return total
