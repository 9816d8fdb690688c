"""The rollout loop: the rollout role's step, written once and driven by every placement (Sample
Factory 2's components that differ only in where they run).

A `RolloutLoop` steps the splits of one or more `RolloutWorker`s: it advances a split whose actions
are written, hands its finished trajectories over (`deliver`, injected: a batcher in the serial
placement, a learner's queue in a rollout process) and starts the split's next rollout; a split
whose next rollout has no free block waits on its own (back-pressure from the learners) while the
others go on. How the actions get written is the placement's choice:

- in-process acting (`step(act)`): the serial placement and a rollout process with
  `--policy_workers_per_policy=0` act on every ready split at once (`surge.sampling.inference_loop`);
- requests to inference processes: the rollout process sends a request per split and calls
  `advance` when the replies came, `resume_waiting` to restart splits that got a block.

Each loop counts its steps (`steps`) and logs its first one, so a test can tell which loop classes
ran in a placement (`tests/integration/test_one_run_loop.py`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from surge.data.routing import OwnSlots
from surge.sampling.rollout_worker import RolloutWorker

log = logging.getLogger("surge")

#: a split of the loop: (index of its worker in `RolloutLoop.workers`, split index in that worker)
Split = tuple[int, int]
#: `deliver(policy_id, first_slot, own)`: a finished block's trajectories for a learning policy
Deliver = Callable[[int, int, OwnSlots], None]


class RolloutLoop:
    """Steps the splits of `workers` and hands finished trajectories to `deliver`.

    Args:
        workers: the rollout workers whose splits this loop steps (the serial placement: all of the
            run's; a rollout process: its own one).
        deliver: called as `deliver(policy_id, first_slot, own)` for each learning policy a finished
            block has trajectories of (`RolloutWorker.hand_over`'s routing).
        env_steps: shared-memory env step counts `[num_workers]` int64; when given, every advance
            adds its worker's env steps at `env_steps_index` (a rollout process); None: the caller
            pops them (`RolloutWorker.pop_env_steps`, the serial placement's step report).
        env_steps_index: this loop's entry of `env_steps`.
    """

    def __init__(
        self,
        workers: list[RolloutWorker],
        deliver: Deliver,
        env_steps: Any = None,
        env_steps_index: int = 0,
    ):
        self.workers, self.deliver = workers, deliver
        self.env_steps, self.env_steps_index = env_steps, env_steps_index
        #: every split of the loop, in the order they are acted on and stepped
        self.splits: list[Split] = [(i, s) for i, w in enumerate(workers) for s in range(len(w.splits))]
        #: splits whose next rollout has no free block yet (a set: its order is that of the ints'
        #: hashes, the same in every run, which the serial placement's exact resume relies on)
        self.waiting: set[Split] = set()
        self.steps = 0  # env steps of single splits taken by this loop (`advance` calls)

    def state_dict(self) -> dict[str, Any]:
        """The loop's state between two steps, for exact resume: each worker's `state_dict` (its
        envs included) under "workers", the waiting splits under "waiting" (sorted pairs).

        Raises:
            EnvStateUnsupported: an env's state cannot be saved.
        """
        return {"workers": [w.state_dict() for w in self.workers], "waiting": sorted(self.waiting)}

    @staticmethod
    def check_state_dict(workers: list[RolloutWorker], state: dict[str, Any]) -> None:
        """Checks, before anything is restored (and before the loop is made), that every worker
        of `workers` can load its part of `state` (a `state_dict`).

        Raises:
            ValueError: a worker's envs cannot take their saved state (`EnvStateRefused` included);
                or `state` has another number of workers.
        """
        for w, ws in zip(workers, state["workers"], strict=True):
            w.check_state_dict(ws)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores `state_dict`'s state (instead of resetting the workers)."""
        self.waiting = {(int(w), int(s)) for w, s in state["waiting"]}
        for w, ws in zip(self.workers, state["workers"], strict=True):
            w.load_state_dict(ws)

    def resume_waiting(self) -> list[Split]:
        """The waiting splits whose next rollout now has a block (they wait no more)."""
        started = []
        for i, s in list(self.waiting):
            if self.workers[i].start_next_rollout(s):
                self.waiting.discard((i, s))
                started.append((i, s))
        return started

    def ready(self) -> list[Split]:
        """The splits not waiting for a block (their actions can be computed now)."""
        waiting = self.waiting
        if not waiting:
            return self.splits  # the common case: no new list per step
        return [split for split in self.splits if split not in waiting]

    def step(self, act: Callable[[list[Split]], None]) -> int:
        """One env step of every split that has a block, acting in this process: restarts the
        waiting splits that got a block, then `step_ready(act)`. Returns the number of splits
        stepped (0 when all wait for the learners)."""
        if self.waiting:
            self.resume_waiting()
        return self.step_ready(act)

    def step_ready(self, act: Callable[[list[Split]], None]) -> int:
        """`act(splits)` writes the actions of every split not waiting, at once (it must not keep
        or change the list), then each is advanced in turn; a split whose next rollout has no
        block then waits. Returns the number of splits stepped."""
        active = self.ready()
        if not active:
            return 0
        act(active)
        for i, s in active:
            if not self.advance(i, s):
                self.waiting.add((i, s))
        return len(active)

    def advance(self, i: int, s: int) -> bool:
        """Steps split `s` of worker `i` (its actions written), hands finished trajectories over and
        starts the split's next rollout. Returns False when that rollout has no free block yet:
        the caller marks the split waiting (`step` does)."""
        if not self.steps:
            log.info("RolloutLoop: first step (pid %d, %d split(s))", os.getpid(), len(self.splits))
        self.steps += 1
        w = self.workers[i]
        finished = w.advance(s)
        if self.env_steps is not None:
            self.env_steps[self.env_steps_index] += w.pop_env_steps()
        if finished is None:
            return True
        first = int(finished[0])
        for p, own in w.hand_over(s, finished).items():
            self.deliver(p, first, own)
        return w.start_next_rollout(s)
