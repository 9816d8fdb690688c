"""How often an async learner computes and sends its batch statistics.

The main process keeps only each learner's latest `TrainStats` (it prints them every
`--report_interval_sec` and writes them every `--experiment_summaries_interval`), so statistics of
the batches in between were computed, pickled and sent for nothing: on CartPole about 0.26 ms of
the learner's 14 ms per batch for the diagnostic ops, plus the message and the main process's
wake-up, sixty times a second. As Sample Factory 2 (`Learner._should_save_summaries`), a learner
computes them at most once per `interval` seconds; the batches in between send nothing, unless a
batch has something the run must hear of at once (a skipped optimizer step, a batch stopped
early, a data-parallel round's frame counts), which goes with the last diagnostics.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: seconds between two batches whose diagnostic statistics are computed and sent: a fifth of the
#: default `--report_interval_sec` (5 s), so a progress line shows statistics at most this old
DIAGNOSTICS_INTERVAL_SEC = 1.0

#: statistics a batch reports at once, whatever the cadence (`surge.runtime.policy_stats.log_train_notes`
#: logs the first two; a data-parallel round's counts drive the run's global frame count)
URGENT_KEYS = ("skipped_updates", "stopped_early", "global_env_frames")


class StatsCadence:
    """Decides, batch by batch, whether a learner computes its diagnostics and what it sends.

    Args:
        interval: seconds between two batches with diagnostics (the first batch has them).
        clock: monotonic seconds (a test's fake clock).
    """

    def __init__(
        self, interval: float = DIAGNOSTICS_INTERVAL_SEC, clock: Callable[[], float] = time.monotonic
    ):
        self.interval, self.clock = interval, clock
        self.next_due = float("-inf")
        self.last: dict[str, float] = {}  # the statistics of the last batch with diagnostics

    def due(self) -> bool:
        """Whether the next batch computes its diagnostics (set `LearnerBase.diagnostics` to it)."""
        return self.clock() >= self.next_due

    def report(self, stats: dict[str, float], with_diagnostics: bool) -> dict[str, float] | None:
        """What to send for a batch's `stats` (`with_diagnostics`: whether it computed them): all
        of them when it did; else None, or, when it has an urgent statistic (`URGENT_KEYS` set and
        non-zero), the last diagnostics updated with this batch's statistics."""
        if with_diagnostics:
            self.last = dict(stats)
            self.next_due = self.clock() + self.interval
            return stats
        if any(stats.get(k) for k in URGENT_KEYS):
            return {**self.last, **stats}
        return None
