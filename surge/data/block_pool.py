"""Trajectory slots, who fills them and which learners hold them.

Each `(worker, split)` owner has a fixed range of `blocks_per_owner x block_size` slots and fills
`block_size` of them (one per agent of its split) with each rollout: a whole aligned block when one
is free (contiguous slots: the workers' cheap path, always the case with one policy), else any free
slots of its range. A finished trajectory is then held by the learner of every learning policy that
acted in it (`surge.data.routing`) until that learner trained on it. Holding is per slot, so a
learner waiting for its next batch holds only its own pending trajectories, never the rest of their
block: P learners' unfinished batches hold at most P x (batch - 1) slots, whatever the mapping.

The pool is one int8 flag per (slot, holder) in shared memory: column p < num_policies is "learner
p holds it", the last column "its owner is filling it". Only the owner sets flags and only learner
p clears column p, so no lock is needed; a slot is free when no flag is set.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


class BlockPool:
    """Holder flags of trajectory slots (see the module docstring).

    Owner o has slots `[o·k·n, (o+1)·k·n)` with k = `blocks_per_owner` and n = `block_size`.
    """

    def __init__(self, num_owners: int, blocks_per_owner: int, block_size: int, num_policies: int = 1):
        self.block_size, self.blocks_per_owner = block_size, blocks_per_owner
        self.num_policies = num_policies
        self.held = torch.zeros(
            num_owners * blocks_per_owner * block_size, num_policies + 1, dtype=torch.int8
        ).share_memory_()

    @property
    def num_blocks(self) -> int:
        return len(self.held) // self.block_size

    @property
    def num_slots(self) -> int:
        return len(self.held)

    def owner_slots(self, owner: int) -> slice:
        """The range of slots owner `owner` fills."""
        per_owner = self.blocks_per_owner * self.block_size
        return slice(owner * per_owner, (owner + 1) * per_owner)

    def owner_view(self, owner: int) -> OwnerBlocks:
        return OwnerBlocks(self, owner)

    def release(self, slots: Sequence[int] | Tensor, policy_id: int = 0) -> None:
        """Learner side: learner `policy_id` is done with the trajectories in `slots`."""
        if len(slots):
            index = slots if isinstance(slots, Tensor) else torch.as_tensor(slots, dtype=torch.int64)
            self.held[index, policy_id] = 0

    def reset_owner(self, owner: int) -> None:
        """A replaced owner (a restarted rollout worker) starts over: the slots it was filling are
        free again; slots learners hold stay theirs until they release them."""
        self.held[self.owner_slots(owner), -1] = 0

    def num_free(self) -> int:
        """Slots no one fills or holds."""
        return int((self.held.sum(dim=1) == 0).sum())


class OwnerBlocks:
    """One (worker, split)'s slots: `get(n)` takes free ones to fill, `hand_over` passes filled
    ones to the learners of the policies that acted in them."""

    def __init__(self, pool: BlockPool, owner: int):
        self.pool = pool
        self.range = pool.owner_slots(owner)

    def get(self, n: int) -> Tensor | None:
        """`n` (= block_size) free slots `[n]` int64 of this owner, now being filled: a whole free
        block when there is one (contiguous), else the lowest free slots; None when fewer than `n`
        are free (learners hold the rest)."""
        pool = self.pool
        assert n == pool.block_size, (n, pool.block_size)
        lo = self.range.start
        busy = pool.held[self.range].any(dim=1)  # [k·n]
        free_blocks = torch.nonzero(~busy.view(-1, n).any(dim=1)).flatten()
        if len(free_blocks):
            first = lo + int(free_blocks[0]) * n
            slots = torch.arange(first, first + n, dtype=torch.int64)
        else:
            free = torch.nonzero(~busy).flatten()
            if len(free) < n:
                return None
            slots = free[:n] + lo
        pool.held[slots, -1] = 1
        return slots

    def hand_over(self, slots: Tensor, policies: dict[int, tuple[int, ...] | None] | list[int]) -> None:
        """Marks the filled `slots` `[n]` held by the learners of `policies` (each policy's own
        slots; None or a plain list of policies: all of them), before they are told; then no longer
        being filled."""
        held = self.pool.held
        shares = policies.items() if isinstance(policies, dict) else ((p, None) for p in policies)
        for p, own in shares:
            if own is None:
                held[slots, p] = 1
            else:
                held[torch.as_tensor(own, dtype=torch.int64), p] = 1
        held[slots, -1] = 0
