"""The batcher: decides what one learner's batch is, the same in every placement.

A learner receives, per finished rollout of a split, the trajectories (slots) its policy acted in
(`surge.data.routing`): with one policy the whole block, with several its share. On-policy learners
train on exactly `traj_per_iteration` trajectories at a time (one training iteration:
`batch_size x num_batches_per_iteration` samples, as Sample Factory trains), oldest first: an
arrival that does not fit whole is split, and its rest starts the next batch. Rounding up to whole
arrivals instead would train more samples per step than asked (blocks of 20 trajectories of 32
steps with `--batch_size=512`: 640 samples, a step of 512 and one of 128). Replay learners take
each arrival whole as it comes. The learner holds its trajectories until it trained
on them and released them (`surge.data.block_pool`), which is the back-pressure that bounds the
policy lag.
"""

from __future__ import annotations

import math
from collections import deque

from surge.cfg.config import Config
from surge.learning.algorithm_registry import get_algorithm


def traj_per_iteration(cfg: Config, agents_per_env: int = 1) -> int:
    """Trajectories (one agent's rollout each) the learner trains on per iteration:
    `batch_size x num_batches_per_iteration / rollout`, or what the algorithm's
    `batch_trajectories` says for envs of `agents_per_env` agents (A2C: one rollout of every
    agent, so that it takes one gradient step per collection round)."""
    per_batch = get_algorithm(cfg.algo).batch_trajectories
    if per_batch is not None:
        return max(1, per_batch(cfg, agents_per_env))
    return max(1, cfg.batch_size * cfg.num_batches_per_iteration // cfg.rollout)


def blocks_per_batch(cfg: Config, block_size: int, agents_per_env: int = 1) -> int:
    """Blocks of `block_size` trajectories that one iteration's worth fills, rounded up."""
    return math.ceil(traj_per_iteration(cfg, agents_per_env) / block_size)


class Batcher:
    """One learner's pending trajectories, handed out oldest first in batches of exactly
    `traj_per_batch` (an arrival split where a batch ends), or with `whole_arrivals` of whole
    arrivals, at least `traj_per_batch` (1: each arrival as it comes, for replay learners).

    Args:
        traj_per_batch: the number of trajectories of a batch (the least, with `whole_arrivals`).
        block_size: slots per block: an arrival given as None is the block `[first, first + n)`.
        whole_arrivals: never split an arrival.
    """

    def __init__(self, traj_per_batch: int, block_size: int, whole_arrivals: bool = False):
        self.traj_per_batch, self.block_size = traj_per_batch, block_size
        self.whole_arrivals = whole_arrivals
        self.pending: deque[list[int]] = deque()  # the slots of each arrival
        self.count = 0  # pending slots in all

    def add(self, first_slot: int, slots: tuple[int, ...] | list[int] | None = None) -> None:
        """Trajectories this learner now holds: `slots`, or None for the block at `first_slot`."""
        own = list(range(first_slot, first_slot + self.block_size)) if slots is None else list(slots)
        self.pending.append(own)
        self.count += len(own)

    def take(self) -> list[int] | None:
        """The slots of the next batch, or None while too few trajectories are pending."""
        if self.count < self.traj_per_batch:
            return None
        slots: list[int] = []
        while len(slots) < self.traj_per_batch:
            slots += self.pending.popleft()
        extra = len(slots) - self.traj_per_batch
        if extra and not self.whole_arrivals:  # the split arrival's rest: first in the next batch
            self.pending.appendleft(slots[-extra:])
            del slots[-extra:]
        self.count -= len(slots)
        return slots

    def put_back(self, slots: list[int]) -> None:
        """Returns an untrained batch from `take` to the front: the next `take` gives it again."""
        self.pending.appendleft(list(slots))
        self.count += len(slots)
