"""Trajectory slots grouped in blocks of one split's agents, and who holds each block.

Block b holds slots `[b·n, (b+1)·n)`. Each block belongs to one `(worker, split)` owner, which fills
it with one rollout; a finished block is then held by the learner of every learning policy that
acted in one of its trajectories (`surge.data.routing`), until that learner trained on the last of
its trajectories there (`surge.learning.batcher`). The pool is one int8 flag per (block, holder) in shared memory:
column p < num_policies is "learner p holds it", the last column "its owner is filling it". Only the
owner sets flags and only learner p clears column p, so no lock is needed; a block is free when no
flag is set.
"""

from __future__ import annotations

import torch
from torch import Tensor


class BlockPool:
    """Holder flags of trajectory-slot blocks (see the module docstring).

    Blocks are assigned to `(worker, split)` owners in order: owner o has blocks
    `[o·k, (o+1)·k)` with k = `blocks_per_owner`.
    """

    def __init__(self, num_owners: int, blocks_per_owner: int, block_size: int, num_policies: int = 1):
        self.block_size, self.blocks_per_owner = block_size, blocks_per_owner
        self.num_policies = num_policies
        self.held = torch.zeros(
            num_owners * blocks_per_owner, num_policies + 1, dtype=torch.int8
        ).share_memory_()

    @property
    def num_blocks(self) -> int:
        return len(self.held)

    @property
    def num_slots(self) -> int:
        return self.num_blocks * self.block_size

    def owner_view(self, owner: int) -> OwnerBlocks:
        return OwnerBlocks(self, owner)

    def release(self, first_slot: int, policy_id: int = 0) -> None:
        """Learner side: learner `policy_id` is done with the block starting at `first_slot`."""
        self.held[first_slot // self.block_size, policy_id] = 0

    def reset_owner(self, owner: int) -> None:
        """A replaced owner (a restarted rollout worker) starts over: the blocks it was filling are
        free again; blocks learners hold stay theirs until they release them."""
        k = self.blocks_per_owner
        self.held[owner * k : (owner + 1) * k, -1] = 0

    def num_free(self) -> int:
        return int((self.held.sum(dim=1) == 0).sum())


class OwnerBlocks:
    """One (worker, split)'s blocks: `get(n)` takes a free one to fill, `hand_over` passes a filled
    one to the learners of the policies that acted in it."""

    def __init__(self, pool: BlockPool, owner: int):
        self.pool = pool
        k = pool.blocks_per_owner
        self.blocks = list(range(owner * k, (owner + 1) * k))

    def get(self, n: int) -> Tensor | None:
        """The slots `[n]` int64 of a free block of this owner (now being filled), or None when every
        block is being filled or held by a learner."""
        assert n == self.pool.block_size, (n, self.pool.block_size)
        held = self.pool.held
        for b in self.blocks:
            if not held[b].any():
                held[b, -1] = 1
                return torch.arange(b * n, (b + 1) * n, dtype=torch.int64)
        return None

    def hand_over(self, first_slot: int, policies: list[int]) -> None:
        """Marks the block starting at `first_slot` held by each of `policies`' learners (before
        they are told), then no longer being filled."""
        b = first_slot // self.pool.block_size
        for p in policies:
            self.pool.held[b, p] = 1
        self.pool.held[b, -1] = 0
