"""The batcher: decides what one learner's batch is, the same in every placement.

A learner receives, per finished block, the slots (trajectories) its policy acted in
(`surge.data.routing`). On-policy learners train on exactly `traj_per_iteration` of them at a time
(one training iteration: `batch_size x num_batches_per_iteration` samples), oldest first; a block's
slots may be split over two consecutive batches. A learner holds a block (`surge.data.block_pool`)
until the last batch with slots of it is trained, which is the back-pressure that bounds the policy
lag. Replay learners take each block's slots as they come (`traj_per_batch=None`).
"""

from __future__ import annotations

import math
from collections import deque
from typing import NamedTuple

from surge.cfg.config import Config


def traj_per_iteration(cfg: Config) -> int:
    """Trajectories (one agent's rollout each) the learner trains on per iteration."""
    return max(1, cfg.batch_size * cfg.num_batches_per_iteration // cfg.rollout)


def blocks_per_batch(cfg: Config, block_size: int) -> int:
    """Blocks of `block_size` trajectories that one iteration's worth fills, rounded up."""
    return math.ceil(traj_per_iteration(cfg) / block_size)


class Batch(NamedTuple):
    """A batch the batcher handed out: its slots, and the first slots of the blocks the learner
    releases once it trained on them (blocks none of whose slots remain pending)."""

    slots: list[int]
    release: list[int]


class Batcher:
    """One learner's pending trajectories, handed out in batches of exactly `traj_per_batch`
    (None: each block's slots as one batch), oldest first.

    Args:
        traj_per_batch: trajectories per batch, or None for one block's share at a time.
        block_size: slots per block (block b holds slots `[b·n, (b+1)·n)`).
    """

    def __init__(self, traj_per_batch: int | None, block_size: int):
        self.traj_per_batch, self.block_size = traj_per_batch, block_size
        self.pending: deque[tuple[int, list[int]]] = deque()  # (first_slot, its pending slots)
        self.count = 0  # pending slots in all

    def add(self, first_slot: int, slots: tuple[int, ...] | list[int] | None = None) -> None:
        """A block this learner now holds: `slots` are its own (None: all of the block's)."""
        own = list(range(first_slot, first_slot + self.block_size)) if slots is None else list(slots)
        self.pending.append((first_slot, own))
        self.count += len(own)

    def take(self) -> Batch | None:
        """The next batch, or None while too few trajectories are pending."""
        if self.traj_per_batch is None:
            if not self.pending:
                return None
            first, own = self.pending.popleft()
            self.count -= len(own)
            return Batch(own, [first])
        n = self.traj_per_batch
        if self.count < n:
            return None
        slots: list[int] = []
        release: list[int] = []
        while len(slots) < n:
            first, own = self.pending[0]
            need = n - len(slots)
            if len(own) <= need:
                slots += own
                release.append(first)
                self.pending.popleft()
            else:  # the rest of this block goes into the next batch
                slots += own[:need]
                self.pending[0] = (first, own[need:])
        self.count -= n
        return Batch(slots, release)

    def put_back(self, batch: Batch) -> None:
        """Returns an untrained batch from `take` to the front: the next `take` gives it again."""
        groups: list[tuple[int, list[int]]] = []
        for s in batch.slots:
            first = s - s % self.block_size
            if groups and groups[-1][0] == first:
                groups[-1][1].append(s)
            else:
                groups.append((first, [s]))
        if groups and self.pending and self.pending[0][0] == groups[-1][0]:
            first, own = self.pending.popleft()  # a block split between this batch and the next
            groups[-1] = (first, groups[-1][1] + own)
        self.pending.extendleft(reversed(groups))
        self.count += len(batch.slots)

    def state(self) -> list[list[int]]:
        """The pending slots, as `[first_slot, slot, ...]` per block (plain lists, for saving)."""
        return [[first, *own] for first, own in self.pending]

    def load_state(self, state: list[list[int]]) -> None:
        self.pending = deque((int(e[0]), [int(s) for s in e[1:]]) for e in state)
        self.count = sum(len(own) for _, own in self.pending)
