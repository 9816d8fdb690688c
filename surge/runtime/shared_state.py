"""State shared between the processes of the async placement, in shared memory:

- `SharedWeights`: the learner's model state as one flat float32 tensor plus `policy_version`;
  inference copies it when the version moved (under a lock, once per learner iteration).
- `BlockPool`: trajectory slots grouped in blocks of one split's agents; each block belongs to one
  (worker, split) and is either free (1) or in use (0). Only its owner takes it, only the learner
  gives it back, so a flag per block needs no lock.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn


def _float_state(model: nn.Module) -> list[tuple[str, Tensor]]:
    return [(k, v) for k, v in model.state_dict().items() if v.dtype.is_floating_point]


class SharedWeights:
    """Flat copy of `model`'s floating-point state (parameters and buffers) in shared memory.

    Args:
        model: a model with the layout every process uses (only its sizes are read).
        lock: a multiprocessing lock (from the spawn context).
    """

    def __init__(self, model: nn.Module, lock: Any):
        size = sum(v.numel() for _, v in _float_state(model))
        self.flat = torch.zeros(size, dtype=torch.float32).share_memory_()
        self.version = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.lock = lock

    def publish(self, model: nn.Module, policy_version: int) -> None:
        """Learner side: copies the model's state and sets `policy_version`."""
        with torch.no_grad(), self.lock:
            offset = 0
            for _, v in _float_state(model):
                n = v.numel()
                self.flat[offset : offset + n].copy_(v.reshape(-1), non_blocking=False)
                offset += n
            self.version[0] = policy_version

    def read_version(self) -> int:
        return int(self.version[0])

    def load_into(self, model: nn.Module) -> int:
        """Inference side: copies the shared state into `model`; returns its policy_version."""
        with torch.no_grad(), self.lock:
            offset = 0
            for _, v in _float_state(model):
                n = v.numel()
                v.copy_(self.flat[offset : offset + n].view_as(v))
                offset += n
            return int(self.version[0])


class BlockPool:
    """Free/in-use flags of trajectory-slot blocks; block b holds slots `[b·n, (b+1)·n)`.

    Blocks are assigned to `(worker, split)` owners in order: owner o has blocks
    `[o·k, (o+1)·k)` with k = `blocks_per_owner`.
    """

    def __init__(self, num_owners: int, blocks_per_owner: int, block_size: int):
        self.block_size, self.blocks_per_owner = block_size, blocks_per_owner
        self.free = torch.ones(num_owners * blocks_per_owner, dtype=torch.int8).share_memory_()

    @property
    def num_slots(self) -> int:
        return len(self.free) * self.block_size

    def owner_view(self, owner: int) -> OwnerBlocks:
        return OwnerBlocks(self, owner)

    def release(self, first_slot: int) -> None:
        """Learner side: the block starting at `first_slot` is free again."""
        self.free[first_slot // self.block_size] = 1


class OwnerBlocks:
    """One (worker, split)'s blocks, with the `get(n)` interface the rollout worker uses."""

    def __init__(self, pool: BlockPool, owner: int):
        self.pool = pool
        k = pool.blocks_per_owner
        self.blocks = list(range(owner * k, (owner + 1) * k))

    def get(self, n: int) -> Tensor | None:
        """The slots `[n]` of a free block of this owner (now in use), or None when all are in use."""
        assert n == self.pool.block_size, (n, self.pool.block_size)
        for b in self.blocks:
            if self.pool.free[b]:
                self.pool.free[b] = 0
                return torch.arange(b * n, (b + 1) * n, dtype=torch.int64)
        return None
