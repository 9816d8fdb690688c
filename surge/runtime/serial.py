"""The serial placement (`--serial_mode=True`): rollout workers, inference and learner of the
async engine, called in turn in one process. Every split's observations go through one batched
forward pass; finished trajectories are trained on once a learner iteration's worth is ready."""

from __future__ import annotations

import logging
from typing import Protocol

import torch

from surge.runtime.components import Components, traj_per_iteration

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

    def take(self, n: int) -> torch.Tensor | None:
        """`n` finished trajectory slots, or None when fewer are ready."""
        if self.num_pending < n:
            return None
        slots = torch.cat(self.pending)
        taken, rest = slots[:n], slots[n:]
        self.pending = [rest] if len(rest) else []
        self.num_pending = len(rest)
        return taken


class Progress(Protocol):
    """What a placement reports to: counts steps, prints, saves, and says when to stop."""

    env_frames: int

    def on_step(self, train_stats: dict | None) -> bool:
        """Called after every sampling step (None) or training iteration (the learner's
        statistics); returns False to stop."""
        ...


def run_serial(c: Components, progress: Progress) -> None:
    """Samples and trains until `progress.on_step` returns False."""
    sampler = SerialSampler(c)
    per_iteration = traj_per_iteration(c.cfg)
    while True:
        sampler.step()
        slots = sampler.take(per_iteration)
        stats = None
        if slots is not None:
            stats = c.learner.train(slots, env_frames=progress.env_frames)
            c.slot_pool.put(slots)
            c.inference.policy_version = c.learner.policy_version
        if not progress.on_step(stats):
            break
