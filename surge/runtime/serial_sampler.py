"""The serial placement's sampler (`surge.runtime.serial`): every rollout worker's splits stepped by
one `RolloutLoop`, acting in process through each policy's `InferenceLoop`, the finished
trajectories grouped into each policy's batches; and its whole state between two steps, which
exact resume saves and restores (`SerialSampler.state_dict`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

from surge.data.routing import OwnSlots, route_block
from surge.data.trajectory import tree_assign
from surge.learning.amp import casts_kept
from surge.learning.batcher import Batcher
from surge.runtime.components import Components
from surge.sampling.inference_loop import InferenceLoop, InProcessActing
from surge.sampling.rollout_loop import RolloutLoop


class SerialSampler:
    """Collects experience from all workers into trajectory slots, in one process, and groups the
    finished blocks into each policy's batches."""

    def __init__(self, c: Components, state: dict[str, Any] | None = None, keep_casts: bool = False):
        self.c = c
        self.batchers = [c.layout.make_batcher() for _ in range(c.cfg.num_policies)]
        self.loop = RolloutLoop(c.workers, self._deliver)
        self.inference_loops = [InferenceLoop(inference) for inference in c.inferences]
        self.acting = InProcessActing(c.workers, self.inference_loops)
        #: with `keep_casts`, under mixed precision, autocast's casts of the weights are kept from one
        #: step's forward pass to the next (`surge.learning.amp.casts_kept`) until `drop_casts`: the
        #: learner's forward passes drop them (`autocast_fresh`); the owner calls `drop_casts` when
        #: weights change otherwise and when done (the kept region stays open on its thread)
        self._kept: contextlib.AbstractContextManager[None] | None = None
        self._keeps_casts = keep_casts and any(inference.autocasts for inference in c.inferences)
        if state is not None:
            self.load_state_dict(state)
        else:
            for w in c.workers:
                w.reset()

    @property
    def waiting(self) -> set[tuple[int, int]]:
        """(worker, split) with no free block for its next rollout (`RolloutLoop.waiting`)."""
        return self.loop.waiting

    @waiting.setter
    def waiting(self, value: set[tuple[int, int]]) -> None:
        self.loop.waiting = value

    def _deliver(self, policy_id: int, first: int, own: OwnSlots) -> None:
        self.batchers[policy_id].add(first, own)

    def state_dict(self) -> dict[str, Any]:
        """The sampler's whole state between two steps: every trajectory buffer, the block pool's
        holder flags, each policy's pending trajectories, the waiting splits and each worker's
        `state_dict` (envs included). Tensors and plain values only.

        "actor_ids" `[num_slots]` int64 is saved with the buffers: a trajectory a stop left pending
        (finished, not yet given to its learner) keeps its agent's actor id, which a replay learner
        needs (the actor is the trajectory's replay column); a worker's `load_state_dict` claims
        only the slots its splits are filling now.

        Raises:
            EnvStateUnsupported: an env's state cannot be saved.
        """
        c = self.c
        buffers = c.buffers
        return {
            **self.loop.state_dict(),  # "workers" and "waiting"
            "buffers": {name: getattr(buffers, name) for name in buffers.FIELDS},
            "actor_ids": buffers.actor_ids.clone(),
            "block_pool": c.block_pool.held.clone(),
            "pending_slots": [[list(own) for own in b.pending] for b in self.batchers],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores `state_dict`'s state (instead of resetting the workers).

        Raises:
            ValueError: the state is of a run with other buffers, blocks or workers.
        """
        c = self.c
        held = state["block_pool"]
        if len(held) == c.block_pool.num_blocks and "pending_slots" not in state:
            held = held.repeat_interleave(c.block_pool.block_size, dim=0)  # saved per block, not slot
        if tuple(held.shape) != tuple(c.block_pool.held.shape) or len(state["workers"]) != len(c.workers):
            raise ValueError(
                f"sampler state has {len(state['workers'])} workers and block pool "
                f"{tuple(held.shape)}, this run {len(c.workers)} and {tuple(c.block_pool.held.shape)}"
            )
        for name, saved in state["buffers"].items():
            tree_assign(getattr(c.buffers, name), slice(None), saved)
        if "actor_ids" in state:  # older states lack them: see `SerialPlacement._matching_sampler_state`
            c.buffers.actor_ids.copy_(state["actor_ids"])
        c.block_pool.held.copy_(held)
        if "pending_slots" in state:
            for b, pending in zip(self.batchers, state["pending_slots"], strict=True):
                for own in pending:
                    b.add(0, [int(s) for s in own])
        else:  # saved before routing by trajectory: whole blocks, each policy's share of them
            for p, (b, firsts) in enumerate(zip(self.batchers, state["pending"], strict=True)):
                self._load_pending_blocks(p, b, [int(f) for f in firsts])
        self.loop.load_state_dict(state)

    def _load_pending_blocks(self, policy_id: int, batcher: Batcher, firsts: list[int]) -> None:
        """Pending blocks of a sampler state saved before routing by trajectory: each block's
        trajectories policy `policy_id` acted in (from the restored buffers) go to its batcher."""
        n, buffers, pool = self.c.block_pool.block_size, self.c.buffers, self.c.block_pool
        for f in firsts:
            slots = np.arange(f, f + n)
            route = route_block(
                slots, buffers.policy_id[f : f + n].numpy(), buffers.is_active[f : f + n].numpy(), [policy_id]
            )
            if policy_id not in route:  # nothing of it to learn from
                pool.release(slots.tolist(), policy_id)
                continue
            own = route[policy_id]
            batcher.add(f, own)
            if own is not None:  # the other trajectories are not its own
                pool.release(sorted(set(slots.tolist()) - set(own)), policy_id)

    def step(self) -> None:
        """One env step of every split that has slots: inference for all of them (one forward pass
        per policy), then env stepping (`RolloutLoop.step`). A split whose blocks are all with the
        learners waits until they release one."""
        if self._keeps_casts and self._kept is None:
            self._kept = casts_kept(self.c.device)
            self._kept.__enter__()
        self.loop.step(self.acting)

    def drop_casts(self) -> None:
        """Drops the kept casts of the weights (`step`): call it when a policy's weights change in
        place other than by its learner's training (a command, a frozen policy's new weights), and
        when done with the sampler (the kept region belongs to this thread)."""
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.__exit__(None, None, None)
        if self._keeps_casts:
            torch.clear_autocast_cache()

    def take(self, policy_id: int = 0) -> torch.Tensor | None:
        """The slots `[N]` int64 of policy `policy_id`'s next batch (at least one iteration's worth
        of its trajectories), or None; give them back with `release` after training, or with
        `put_back` when the batch was not trained."""
        slots = self.batchers[policy_id].take()
        return None if slots is None else torch.tensor(slots, dtype=torch.int64)

    def put_back(self, slots: torch.Tensor, policy_id: int = 0) -> None:
        """Returns an untrained batch (as returned by `take`) to the front of the policy's queue: the
        next `take` gives it again."""
        self.batchers[policy_id].put_back(slots.tolist())

    def release(self, slots: torch.Tensor, policy_id: int = 0) -> None:
        """Policy `policy_id`'s learner is done with the trajectories `slots` (as returned by `take`)."""
        self.c.block_pool.release(slots, policy_id)
