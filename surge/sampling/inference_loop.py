"""The inference loop: one policy's inference step, written once and driven by every placement.

An `InferenceLoop` handles a batch of requests `(slots, t)` in one forward pass of its policy's
`InferenceWorker`, after reloading the policy's weights when a new version was published (the
async placement's processes read them from shared memory; the serial placement shares the
learner's model and gives no weights source). `InProcessActing` is acting in the process that steps
the envs (the serial placement, and a rollout process with `--policy_workers_per_policy=0`): it
turns the ready splits of a `RolloutLoop` into each policy's requests.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, Protocol

from torch import Tensor, nn

from surge.sampling.inference import InferenceWorker
from surge.sampling.rollout_worker import RolloutWorker

log = logging.getLogger("surge")

#: one split's request: its slots (`[N]` int64, or a slice when contiguous) and its step t
Request = tuple[Tensor | slice, int]


class WeightsSource(Protocol):
    """Published weights (`surge.runtime.shared_state.SharedWeights`)."""

    def read_seq(self) -> int:
        """The write counter; it moves with every publish."""
        ...

    def load_into(self, model: nn.Module) -> int | None:
        """Copies the weights into `model`; their policy_version, or None when no consistent copy
        could be read (`model` may then hold a torn copy: the run is stopping)."""
        ...


class InferenceLoop:
    """Handles batches of requests for one policy.

    Args:
        inference: the policy's `InferenceWorker` (its model, the trajectory buffers).
        weights: where the policy's weights are published; None when `inference`'s model is the
            learner's own (the serial placement: the placement sets `inference.policy_version`).
        env_frames: shared-memory `[1]` int64 of the run's env frames, read before each forward pass
            (`ActContext.env_frames`); None: the placement sets `inference.env_frames`.
    """

    def __init__(
        self, inference: InferenceWorker, weights: WeightsSource | None = None, env_frames: Any = None
    ):
        self.inference, self.weights, self.env_frames = inference, weights, env_frames
        self.seen = -1  # the weights' write counter when last loaded
        self.steps = 0  # batches handled

    def reload(self) -> None:
        """Loads the published weights when they changed since the last load (one shared-memory
        read when they did not)."""
        weights = self.weights
        if weights is None:
            return
        stamp = weights.read_seq()
        if stamp != self.seen:
            loaded = weights.load_into(self.inference.model)
            self.inference.weights_changed()  # (torn or not, the old weights' casts are stale)
            if loaded is not None:  # else the learner died mid-publish: the run is stopping
                self.inference.policy_version, self.seen = loaded, stamp

    def handle(self, requests: Sequence[Request]) -> None:
        """Reloads changed weights, then writes the actions (and what else the algorithm's `act`
        returns) of every request in one forward pass (`InferenceWorker.infer`). An empty batch
        only reloads."""
        self.reload()
        if not requests:
            return
        if not self.steps:
            log.info("InferenceLoop: first step (pid %d, policy %d)", os.getpid(), self.inference.policy_id)
        self.steps += 1
        if self.env_frames is not None:
            self.inference.env_frames = int(self.env_frames[0])
        self.inference.infer(requests)


class InProcessActing:
    """Acting for a `RolloutLoop` in its own process: `acting(splits)` writes the actions of the
    current step of every split in `splits` (pairs `(worker, split)`), for every policy acting in
    them, with one forward pass per policy over all those splits' agents (a small model's forward
    pass costs little more for 20 rows than for 10).

    Args:
        workers: the rollout loop's workers.
        loops: each policy's inference loop, by policy id.
    """

    def __init__(self, workers: list[RolloutWorker], loops: list[InferenceLoop]):
        self.workers, self.loops = workers, loops

    def __call__(self, splits: list[tuple[int, int]]) -> None:
        workers = self.workers
        if len(self.loops) == 1:  # every split's agents act with policy 0
            one: list[Request] = []
            for i, s in splits:
                w = workers[i]
                _, t = w.policy_request(s)
                one.append((w.splits[s].index, t))  # a slice when contiguous: views, not gathers
            self.loops[0].handle(one)
            return
        requests: dict[int, list[Request]] = {}
        for i, s in splits:
            w = workers[i]
            _, t = w.policy_request(s)  # also writes each agent's policy at policy_id[slots, t]
            index = w.splits[s].index
            for p in w.request_policies(s):
                requests.setdefault(p, []).append((index, t))
        for p, loop in enumerate(self.loops):  # in policy order: the RNG streams as every run's
            mine = requests.get(p)
            if mine:
                loop.handle(mine)
