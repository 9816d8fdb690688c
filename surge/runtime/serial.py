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
        for w in c.workers:
            w.reset()

    def step(self) -> None:
        """One env step of every split: inference for all, then env stepping."""
        c = self.c
        requests = [w.policy_request(s) for w in c.workers for s in range(len(w.splits))]
        c.inference.infer(requests)
        for w in c.workers:
            for s in range(len(w.splits)):
                finished = w.advance(s)
                if finished is not None:
                    self.pending.append(finished)
                    self.num_pending += len(finished)
                    if not w.start_next_rollout(s):
                        raise RuntimeError("serial placement ran out of trajectory slots")

    def take(self, n: int) -> torch.Tensor | None:
        """Every finished block of trajectories once at least `n` slots are ready (else None); give
        them back with `release` after training."""
        if self.num_pending < n:
            return None
        slots = torch.cat(self.pending)
        self.pending, self.num_pending = [], 0
        return slots

    def release(self, slots: torch.Tensor) -> None:
        """Returns the blocks of `slots` (as returned by `take`) to their owners."""
        pool = self.c.block_pool
        for first in slots[:: pool.block_size].tolist():
            pool.release(first)
