"""The batcher: decides what one learner's batch is, the same in every placement.

On-policy learners train on exactly `blocks_per_batch` finished trajectory blocks at a time (one
training iteration: `batch_size x num_batches_per_iteration` samples, rounded up to whole blocks),
in arrival order. The blocks stay held by the learner until it trained on them and released them
(`surge.data.block_pool`), which is the back-pressure that bounds the policy lag.
"""

from __future__ import annotations

import math

from surge.cfg.config import Config


def traj_per_iteration(cfg: Config) -> int:
    """Trajectories (one agent's rollout each) the learner trains on per iteration."""
    return max(1, cfg.batch_size * cfg.num_batches_per_iteration // cfg.rollout)


def blocks_per_batch(cfg: Config, block_size: int) -> int:
    """Blocks of `block_size` trajectories in one batch: an iteration's worth, rounded up."""
    return math.ceil(traj_per_iteration(cfg) / block_size)


class Batcher:
    """Collects the first slots of finished blocks and hands them out in batches of exactly
    `blocks_per_batch`, oldest first."""

    def __init__(self, blocks_per_batch: int, block_size: int):
        self.blocks_per_batch, self.block_size = blocks_per_batch, block_size
        self.pending: list[int] = []

    def add(self, first_slot: int) -> None:
        self.pending.append(first_slot)

    def take(self) -> list[int] | None:
        """The first slots of the next batch's blocks, or None while fewer are pending."""
        if len(self.pending) < self.blocks_per_batch:
            return None
        batch, self.pending = self.pending[: self.blocks_per_batch], self.pending[self.blocks_per_batch :]
        return batch
