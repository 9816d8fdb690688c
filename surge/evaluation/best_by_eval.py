"""`--save_best_by_eval`: the `best` checkpoint of a policy is the weights whose evaluation scored
the highest mean eval return so far. Kept by whichever process evaluates (the main process in the
serial placement, the evaluator process in the async one), so the weights written are exactly the
ones that were played, never newer ones."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from surge.cfg.config import Config
from surge.runtime.checkpoint import CheckpointManager, rng_state
from surge.runtime.placement import published_policy_state

log = logging.getLogger("surge")


class BestByEval:
    """The best mean eval return of each policy and its checkpoint writer.

    Args:
        cfg: the run's config.
        folders: policy id -> its checkpoint folder (`ExperimentFolder.checkpoints`).
        resume: read each policy's previous best from its `best` checkpoint's "eval_return" (a
            best checkpoint chosen by training return has none: the first evaluation replaces it).
    """

    def __init__(self, cfg: Config, folders: dict[int, Path], resume: bool):
        self.cfg = cfg
        self.ckpts = {p: CheckpointManager(f, cfg.keep_checkpoints, p) for p, f in folders.items()}
        self.best = dict.fromkeys(folders, float("-inf"))
        for p, ckpt in self.ckpts.items():
            if resume and ckpt.latest("best") is not None:
                state = ckpt.load("best")
                if state is not None and "eval_return" in state:
                    self.best[p] = float(state["eval_return"])

    def offer(
        self,
        policy_id: int,
        weights: dict[str, torch.Tensor],
        policy_version: int,
        eval_return: float,
        counters: dict[str, Any],
    ) -> Path | None:
        """Writes `weights` as policy `policy_id`'s best checkpoint when `eval_return` beats its
        best so far; returns the path written, else None.

        The checkpoint holds "model" (`weights`), "learner" (only `policy_version` and the
        policy's hyper-parameters: no optimizer state; a run resumes from its latest regular
        checkpoint, never from `best`), the run's `counters` (with "env_frames" those at which the
        weights were read), "eval_return" and the RNG states. Named `best_v{version}_f{env_frames}.pth`.
        """
        if not eval_return > self.best[policy_id]:
            return None
        state = published_policy_state(self.cfg, policy_id, weights, policy_version, None)
        state = {**state, **counters, "eval_return": float(eval_return), "rng": rng_state()}
        path = self.ckpts[policy_id].save(state, policy_version, int(counters["env_frames"]), kind="best")
        if path is not None:  # else CheckpointManager logged why (non-finite weights)
            self.best[policy_id] = eval_return
        return path
