"""The serial placement (`--serial_mode=True`): rollout workers, inference and learner of the
async engine, called in turn in one process. Every split's observations go through one batched
forward pass; finished trajectories are trained on once a learner iteration's worth is ready."""

from __future__ import annotations

import logging

import torch

from surge.runtime.components import Components

log = logging.getLogger("surge")


class SerialSampler:
    """Collects experience from all workers into trajectory slots, in one process."""

    def __init__(self, c: Components):
        self.c = c
        self.pending: list[torch.Tensor] = []
        self.num_pending = 0
        self.waiting: set[tuple[int, int]] = set()  # (worker, split) with no free block for its next rollout
        for w in c.workers:
            w.reset()

    def step(self) -> None:
        """One env step of every split that has slots: inference for all of them, then env stepping.
        A split whose blocks are all with the learner (synchronous PPO) waits until `release`."""
        c = self.c
        for w_idx, s in list(self.waiting):
            if c.workers[w_idx].start_next_rollout(s):
                self.waiting.discard((w_idx, s))
        active = [
            (i, s)
            for i, w in enumerate(c.workers)
            for s in range(len(w.splits))
            if (i, s) not in self.waiting
        ]
        if not active:
            return
        c.inference.infer([c.workers[i].policy_request(s) for i, s in active])
        for i, s in active:
            w = c.workers[i]
            finished = w.advance(s)
            if finished is not None:
                self.pending.append(finished)
                self.num_pending += len(finished)
                if not w.start_next_rollout(s):
                    self.waiting.add((i, s))

    def take(self, n: int) -> torch.Tensor | None:
        """Every finished block of trajectories once at least `n` slots are ready, or when splits
        wait for blocks the learner holds (else None); give them back with `release` after training."""
        if self.num_pending < n and not (self.waiting and self.num_pending):
            return None
        slots = torch.cat(self.pending)
        self.pending, self.num_pending = [], 0
        return slots

    def release(self, slots: torch.Tensor) -> None:
        """Returns the blocks of `slots` (as returned by `take`) to their owners."""
        pool = self.c.block_pool
        for first in slots[:: pool.block_size].tolist():
            pool.release(first)
