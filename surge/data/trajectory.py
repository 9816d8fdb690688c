"""Preallocated trajectory buffers: every field of every trajectory slot, `[num_slots, T(+1), ...]`.

One slot holds one agent's rollout of T = `cfg.rollout` steps. Rollout workers and inference write
into a slot by index `(slots, t)`; the learner reads whole slots. Messages carry slot indices only.
The tensors can live in shared memory (`share_memory()`), so the same layout serves the serial and
the multi-process placements. Float fields start as NaN so that a read of a never-written value
shows up at once.

Core fields, which every sampler writes (S slots, T steps; obs and rnn_states have T+1 rows, the
last being the bootstrap step):

==================  =========================  =========
field               shape                      dtype
==================  =========================  =========
obs                 [S, T+1, *obs_shape]       obs dtype (a dict of them for Dict spaces)
obs["action_mask"]  [S, T+1, num_logits]       bool, 1 = legal (envs with action masks only)
rnn_states          [S, T+1, state_size]       float32
actions             [S, T, *action_shape]      int64 / float32
rewards             [S, T]                     float32
terminated          [S, T]                     bool
truncated           [S, T]                     bool
is_active           [S, T]                     bool
policy_id           [S, T]                     int8 (the policy that acted at step t)
policy_version      [S, T]                     int64 (its version when it acted)
==================  =========================  =========

An algorithm adds the fields its inference writes (`surge.learning.algorithm.FieldSpec`, e.g. APPO's
behavior_log_probs, values and action_logits); each is an attribute of the buffers by its name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor

from surge.envs.action_masks import MASK_KEY
from surge.errors import EnvError
from surge.models.distributions import action_shape

Tree = Any  # a Tensor or a dict of Trees


def tree_map(fn: Callable[[Tensor], Any], tree: Tree) -> Tree:
    """Applies `fn` to every tensor of a (possibly nested) dict of tensors."""
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    return fn(tree)


def tree_leaves(tree: Tree) -> list[Tensor]:
    """The tensors of a (possibly nested) dict of tensors, in `tree_map`'s order."""
    out: list[Tensor] = []
    tree_map(out.append, tree)
    return out


def tree_assign(dst: Tree, index: Any, src: Tree) -> None:
    """`dst[index] = src` for every tensor of a (possibly nested) dict of tensors."""
    if isinstance(dst, dict):
        for k in dst:
            tree_assign(dst[k], index, src[k])
    else:
        dst[index] = src


def gather_rows(t: Tensor, rows: Tensor, pin_memory: bool = False) -> Tensor:
    """`t[rows]` for `rows` `[N]` int64 as `torch.index_select(t, 0, rows)`: a new `[N, ...]`
    tensor, page-locked with `pin_memory` (CUDA only: without a CUDA build or device torch raises
    RuntimeError). `t` must be indexable by rows on dim 0; `rows` must be in `[0, len(t))`."""
    if not pin_memory:
        return torch.index_select(t, 0, rows)
    out = torch.empty((len(rows), *t.shape[1:]), dtype=t.dtype, pin_memory=True)
    return torch.index_select(t, 0, rows, out=out)


def _torch_dtype(np_dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(1, dtype=np_dtype)).dtype


def _obs_buffer(space: gym.Space, lead: tuple[int, ...]) -> Tree:
    if isinstance(space, gym.spaces.Dict):
        return {
            k: torch.ones(*lead, *(s.shape or ()), dtype=torch.bool)
            if k == MASK_KEY
            else _obs_buffer(s, lead)
            for k, s in space.spaces.items()
        }
    if not isinstance(space, gym.spaces.Box):
        raise EnvError(f"observation space {space} is not supported: use Box or Dict of Box")
    dtype = _torch_dtype(space.dtype)
    buf = torch.zeros(*lead, *space.shape, dtype=dtype)
    if dtype.is_floating_point:
        buf.fill_(float("nan"))
    return buf


class TrajectoryBuffers:
    """The trajectory slots of a run (every policy's); see the module docstring for the fields.

    Args:
        num_slots: S, one agent's rollout per slot.
        rollout: T, env steps per trajectory.
        obs_space, action_space: one agent's spaces.
        rnn_state_size: width of the stored recurrent state (0 without an RNN).
        step_fields: the algorithm's own per-step fields (`FieldSpec`s: name, shape, dtype, fill).
    Raises:
        EnvError: the observation space is not Box or a Dict of Box.
        ValueError: an algorithm field has the name of a core field.
    """

    CORE_FIELDS = (
        "obs",
        "rnn_states",
        "actions",
        "rewards",
        "terminated",
        "truncated",
        "is_active",
        "policy_id",
        "policy_version",
    )

    def __init__(
        self,
        num_slots: int,
        rollout: int,
        obs_space: gym.Space,
        action_space: gym.Space,
        rnn_state_size: int,
        step_fields: Sequence[Any] = (),
    ):
        S, T = num_slots, rollout
        self.num_slots, self.rollout = S, T
        a_shape, a_dtype = action_shape(action_space)
        self.obs = _obs_buffer(obs_space, (S, T + 1))
        self.rnn_states = torch.zeros(S, T + 1, rnn_state_size)
        self.actions = torch.zeros(S, T, *a_shape, dtype=a_dtype)
        self.rewards = torch.full((S, T), float("nan"))
        self.terminated = torch.zeros(S, T, dtype=torch.bool)
        self.truncated = torch.zeros(S, T, dtype=torch.bool)
        self.is_active = torch.ones(S, T, dtype=torch.bool)
        self.policy_id = torch.zeros(S, T, dtype=torch.int8)
        self.policy_version = torch.zeros(S, T, dtype=torch.int64)
        # [S] int64, per slot (not per step): the global actor id of the agent filling it
        # (`surge.learning.algorithm.ActContext.actor_ids`), -1 until a rollout worker claims it
        self.actor_ids = torch.full((S,), -1, dtype=torch.int64)
        names = list(self.CORE_FIELDS)
        for spec in step_fields:
            if spec.name in names:
                raise ValueError(f"algorithm field {spec.name!r} clashes with a trajectory field")
            setattr(self, spec.name, torch.full((S, T, *spec.shape), spec.fill, dtype=spec.dtype))
            names.append(spec.name)
        self.FIELDS = tuple(names)

    def share_memory(self) -> TrajectoryBuffers:
        """Moves every tensor to shared memory (for the multi-process placement)."""
        for name in self.FIELDS:
            tree_map(lambda t: t.share_memory_(), getattr(self, name))
        self.actor_ids.share_memory_()
        return self

    def gather(self, slots: Tensor, pin_memory: bool = False) -> dict[str, Tree]:
        """Copies whole trajectories: every field indexed by `slots` `[N]` int64 -> `[N, T(+1), ...]`
        (`torch.index_select` on dim 0: one memcpy per row, where `t[slots]`'s advanced indexing
        copies element by element, about 7x slower on image observations; docs/benchmarks.md).
        With `pin_memory` (a CUDA learner) the copies are in page-locked memory, so that
        `.to(cuda, non_blocking=True)` is one asynchronous DMA and not a staged synchronous copy."""
        return {
            name: tree_map(lambda t: gather_rows(t, slots, pin_memory), getattr(self, name))
            for name in self.FIELDS
        }

    def start_next(self, old_slots: Tensor, new_slots: Tensor) -> None:
        """Carries the bootstrap step (obs and rnn state at T) of finished slots to row 0 of new ones,
        and their agents' `actor_ids`."""
        T = self.rollout
        self.actor_ids[new_slots] = self.actor_ids[old_slots]
        old, new = old_slots.numpy(), new_slots.numpy()

        def carry(t: Tensor) -> None:
            # numpy's row copies: torch's indexing copies image rows element by element, ~28x
            # slower (420 µs for 8 Doom observations, once per split per rollout)
            if t.dtype == torch.bfloat16:  # no numpy dtype
                t[new_slots, 0] = t[old_slots, T]
            else:
                a = t.numpy()
                a[new, 0] = a[old, T]

        tree_map(carry, self.obs)
        carry(self.rnn_states)

    def nbytes(self) -> int:
        """Total size of all buffers in bytes."""
        total = 0
        for name in self.FIELDS:

            def add(t: Tensor) -> None:
                nonlocal total
                total += t.numel() * t.element_size()

            tree_map(add, getattr(self, name))
        return total
