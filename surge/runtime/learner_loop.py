"""The learner loop: one policy's learner step, written once and driven by every placement.

A `LearnerLoop` handles a batch or a command: train one on-policy batch (undone when a stop cut it
short, with `rollback`), observe one replay block and run the updates due, set hyper-parameters,
replace the policy's state by another's, export its state. The serial placement calls it between
env steps; a learner process calls it on its training thread, with the batches and commands of its
queues. Where the trajectories come from and go back to (a batcher, the block pool) stays with the
placement.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from torch import Tensor, nn

from surge.learning.base import Batch, LearnerBase
from surge.runtime.batch_snapshot import BatchSnapshot
from surge.runtime.placement import copy_policy_state, policy_state

if TYPE_CHECKING:  # a type only: runtime sits below distributed in the layer order
    from surge.runtime.data_parallel import DataParallel

log = logging.getLogger("surge")


class LearnerLoop:
    """One policy's learner.

    Args:
        model: the policy's acting module (its weights are what inference acts with).
        learner: the policy's learner (optimizers, learner-only modules, `policy_version`).
        policy_id: the policy's id (logs).
        rollback: snapshot the learner's state before each on-policy batch and restore it when a
            stop cut the batch short (`stats["stopped_early"]`): the serial placement's exact
            resume trains that batch again. Costs one copy of the state (3x the parameters' bytes
            with Adam) per batch, allocated once.
    """

    def __init__(self, model: nn.Module, learner: LearnerBase, policy_id: int, rollback: bool = False):
        self.model, self.learner, self.policy_id = model, learner, policy_id
        self.snapshot: BatchSnapshot | None = BatchSnapshot() if rollback else None
        self.steps = 0  # batches trained or observed
        self.first_trained = False  # the first optimizer update is logged (start-up's end)
        self.start_version = 0  # policy_version when this loop's first batch came (a resumed run's)

    def _first(self) -> None:
        if not self.steps:
            self.start_version = self.learner.policy_version
            log.info("LearnerLoop: first step (pid %d, policy %d)", os.getpid(), self.policy_id)
        self.steps += 1

    @staticmethod
    def begin_round(
        dp: DataParallel | None, local_frames: int, env_frames: int, model: nn.Module
    ) -> int | None:
        """The env frames to train the next batch at: `env_frames`, or in a data-parallel run the
        round's (all ranks' frames, from this rank's `local_frames`): every rank then trains with
        the same learning rate. None when the ranks stopped (the batch is not trained)."""
        if dp is None:
            return env_frames
        return dp.begin_round(local_frames, model)

    def train(self, batch: Tensor | Batch, env_frames: int) -> dict[str, float]:
        """Trains one on-policy batch: the slots `[N]` int64 of its trajectories (prepared here,
        after the snapshot) or a batch from `LearnerBase.prepare_batch`, at `env_frames` (the
        schedules). With `rollback`, a batch a stop cut short is undone (weights, optimizers,
        normalisers, `policy_version` and RNG as before it) and `stats["rolled_back"]` is 1.0: the
        caller gives its trajectories back untrained. Returns the learner's statistics."""
        self._first()
        learner, snap = self.learner, self.snapshot
        if snap is not None:
            snap.take(self.model, learner)
        if isinstance(batch, Tensor):
            stats = learner.train(batch, env_frames=env_frames)
        else:
            stats = learner.train_batch(batch, env_frames=env_frames)
        if snap is not None and stats.get("stopped_early"):
            snap.restore(self.model, learner)
            stats["rolled_back"] = 1.0
        self._log_first_trained()
        return stats

    def _log_first_trained(self) -> None:
        """Logs the end of start-up once: the first batch whose training took an optimizer step
        (`benchmarks/startup.py` reads this line's time)."""
        if self.first_trained or self.learner.policy_version == self.start_version:
            return
        self.first_trained = True
        log.info(
            "LearnerLoop: first batch trained (policy %d, policy version %d)",
            self.policy_id, self.learner.policy_version,
        )  # fmt: skip

    def observe(self, batch: Batch, release: Callable[[], None], env_frames: int) -> dict[str, float] | None:
        """Replay: copies a block's batch (`prepare_batch`) into the replay buffer, `release()`s its
        trajectories at once, and runs the updates due at the replay ratio. Returns their mean
        statistics, or None when none was due."""
        self._first()
        self.learner.observe(batch)
        release()
        stats = self.learner.train_replay(env_frames=env_frames)
        if stats is not None:
            self._log_first_trained()
        return stats

    def finish_stats(
        self, stats: dict[str, float], dp: DataParallel | None = None, local_frames: int = 0
    ) -> dict[str, float]:
        """Adds the policy's hyper-parameters to a batch's `stats` and, in a data-parallel run, the
        round's env frames: all ranks' (`global_env_frames`) and this rank's (`local_env_frames`)."""
        stats.update(self.learner.hp.stats())
        if dp is not None:
            stats.update(global_env_frames=float(dp.global_env_frames), local_env_frames=float(local_frames))
        return stats

    def set_hyperparams(self, values: dict[str, Any]) -> dict[str, tuple[float, float]]:
        """`LearnerBase.set_hyperparams`: `{name: (old, new)}` of the values that changed.

        Raises:
            ValueError: an unknown name or a value out of range (nothing changed).
        """
        return self.learner.set_hyperparams(values)

    def replace(self, state: dict[str, Any]) -> int:
        """Replaces this policy's weights, optimizer and hyper-parameters by another policy's
        `state` (`export`); `policy_version` increments. Returns the new policy_version."""
        copy_policy_state(state, self.model, self.learner)
        return self.learner.policy_version

    def export(self) -> dict[str, Any]:
        """This policy's state (`surge.runtime.placement.policy_state`; shares the live tensors)."""
        return policy_state(self.model, self.learner)
