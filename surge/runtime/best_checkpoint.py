"""When a policy's `best` checkpoint is written: Sample Factory's rule and flags.

Every `--save_best_every_sec` seconds at most (default 5), once the run has `--save_best_after`
env frames (default 100000), a learning policy whose `--save_best_metric` (default `reward`: the
mean return of its last `stats_avg` episodes; `len`: their mean length) beats its best so far gets
a new `best` checkpoint (the previous one is removed: `CheckpointManager.save`). A policy needs
`min(10, stats_avg)` episodes first, so that one lucky episode is not its best. Sample Factory
logs these saves at debug level only; surge logs a policy's first one at info level.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

import numpy as np

from surge.cfg.config import Config
from surge.runtime.policy_stats import PolicyStats

log = logging.getLogger("surge")

#: episodes a policy needs before its mean can be a best (at most stats_avg)
MIN_EPISODES = 10


def metric_value(metric: str, ps: PolicyStats) -> float:
    """`--save_best_metric` of one policy's last episodes: "reward" their mean return, "len" their
    mean length (env steps); nan before the first episode.

    Raises:
        ValueError: an unknown metric (the config refuses it before: its choices).
    """
    if metric == "reward":
        return ps.mean_return()
    if metric == "len":
        return float(np.mean(ps.lengths)) if ps.lengths else float("nan")
    raise ValueError(f"unknown save_best_metric {metric!r}: reward or len")


class BestCheckpoints:
    """Each policy's best `--save_best_metric` value and when the last best checkpoint was written.

    Args:
        cfg: the run's config (save_best_every_sec, save_best_after, save_best_metric, stats_avg).
        num_policies: policies of the run.
    """

    def __init__(self, cfg: Config, num_policies: int):
        self.cfg = cfg
        self.best = [float("-inf")] * num_policies
        self.last_save = 0.0  # time.time() of the last best checkpoint
        self._announced: set[int] = set()

    def restore(self, policy_id: int, state: dict[str, Any]) -> None:
        """The best value of a resumed policy's checkpoint, when it was measured by the same metric
        (a checkpoint written before `save_best_metric` existed measured `reward`)."""
        if state.get("best_metric", "reward") == self.cfg.save_best_metric:
            self.best[policy_id] = float(state["best_return"])

    def due(
        self, now: float, env_frames: int, policies: list[PolicyStats], learning: Collection[int]
    ) -> list[int]:
        """The policies whose best checkpoint is to be written now (their new best recorded, and
        `now` as the last save when any), under the rule of the module doc."""
        cfg = self.cfg
        if now - self.last_save < cfg.save_best_every_sec or env_frames < cfg.save_best_after:
            return []
        out = []
        for i, ps in enumerate(policies):
            if i not in learning or len(ps.returns) < min(MIN_EPISODES, cfg.stats_avg):
                continue
            value = metric_value(cfg.save_best_metric, ps)
            if value > self.best[i]:
                self.best[i] = value
                out.append(i)
        if out:
            self.last_save = now
            for i in out:
                if i not in self._announced:  # later ones: the placement's "Saved" line (debug)
                    self._announced.add(i)
                    log.info(
                        "Policy %d: first best checkpoint, %s %.2f at env frame %d; replaced when it "
                        "improves, at most every %d s (--save_best_every_sec).",
                        i,
                        cfg.save_best_metric,
                        self.best[i],
                        env_frames,
                        cfg.save_best_every_sec,
                    )
        return out
