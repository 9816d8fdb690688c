"""One policy's statistics as the run keeps them (`PolicyStats`: its recent episodes and its
learner's last batch statistics), and the log lines a batch's statistics call for
(`log_train_notes`): what the placements report and the best-checkpoint tracker reads, below the
run's `surge.experiment.monitor` that gathers and writes them."""

from __future__ import annotations

import logging
from collections import deque

import numpy as np

log = logging.getLogger("surge")


def log_train_notes(policy_id: int, stats: dict[str, float]) -> None:
    """Logs what a learner's batch statistics tell that the run's log must say: optimizer steps
    skipped for a non-finite loss or gradient (`skipped_updates`), and a batch left unfinished
    because the run was stopping (`stopped_early`)."""
    skipped = int(stats.get("skipped_updates", 0))
    if skipped:
        log.warning(
            "Policy %d: skipped %d optimizer step(s) of its last batch: the loss or gradient was "
            "not finite (NaN or inf); the weights were left as they were (%d skipped so far). "
            "Lower --learning_rate or --max_grad_norm, or check --reward_scale and the env's rewards.",
            policy_id,
            skipped,
            int(stats.get("skipped_updates_total", skipped)),
        )
    if stats.get("stopped_early"):
        log.warning(
            "Policy %d: stopping in the middle of a batch: %d of its %d optimizer steps taken; %s",
            policy_id,
            int(stats.get("steps_taken", 0)),
            int(stats.get("steps_planned", 0)),
            "they are undone: the final checkpoint holds the weights from before the batch, and the "
            "resumed run trains the whole batch."
            if stats.get("rolled_back")
            else "the final checkpoint holds the weights after them.",
        )


class PolicyStats:
    """One policy's recent episodes (the last `stats_avg`) and its learner's last statistics."""

    def __init__(self, stats_avg: int):
        self.returns: deque[float] = deque(maxlen=stats_avg)
        self.lengths: deque[int] = deque(maxlen=stats_avg)
        self.episodes = 0
        self.train_stats: dict[str, float] = {}

    def mean_return(self) -> float:
        return float(np.mean(self.returns)) if self.returns else float("nan")
