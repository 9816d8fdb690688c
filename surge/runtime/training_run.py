"""One training run from start to finish: experiment folder, resume, the placement's loop,
progress, checkpoints, clean stop on Ctrl+C / SIGTERM, and the `done` marker."""

from __future__ import annotations

import logging
import signal
import time
from typing import Any

from surge.cfg.cli import save_cfg
from surge.experiment.checkpoint import CheckpointManager, rng_state, set_rng_state
from surge.experiment.folder import ExperimentFolder, setup_logging
from surge.experiment.monitor import Monitor
from surge.runtime.components import Components, build_components
from surge.runtime.serial import run_serial

log = logging.getLogger("surge")


class TrainingRun:
    """Runs `cfg` in its experiment folder; `run()` returns the final status string.

    Status: "done" (budget reached), "interrupted" (Ctrl+C / SIGTERM; a checkpoint was saved),
    "already_done" (the folder holds a finished run).
    """

    def __init__(self, cfg: Any):
        self.cfg = cfg
        self.folder = ExperimentFolder(cfg)
        self.stop_requested = False
        self.env_frames = 0
        self.c: Components | None = None

    # ---------------------------------------------------------------------------------------
    def run(self) -> str:
        cfg, folder = self.cfg, self.folder
        if cfg.restart_behavior == "restart":
            folder.wipe()
        setup_logging(None if cfg.benchmark else folder.log_file)
        if folder.done_file.exists() and cfg.restart_behavior == "resume":
            log.info(
                "Experiment %s already finished (%s exists); nothing to do. Pass --restart_behavior=restart "
                "to train it again, or raise --train_for_env_steps and delete the done file.",
                folder.root,
                folder.done_file,
            )
            return "already_done"
        if not cfg.serial_mode:
            log.warning("The multi-process placement is not built yet: running the serial placement.")
        if not cfg.benchmark:
            save_cfg(cfg, folder.cfg_file)
        log.info("Experiment folder: %s", folder.root)
        self.c = c = build_components(cfg)
        self.ckpt = CheckpointManager(folder.checkpoints(0), cfg.keep_checkpoints)
        self.monitor = Monitor(cfg, None if cfg.benchmark else folder.summaries(0))
        self.best_return = float("-inf")
        self.train_seconds_before = 0.0
        self._resume()
        self.start_time = time.time()
        self.last_save = self.last_milestone = self.start_time
        old_handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            run_serial(c, self)
        finally:
            for s, h in old_handlers.items():
                signal.signal(s, h)
            self.monitor.tick(force=True)
            if not cfg.benchmark:
                self._save("checkpoint")
            self.monitor.close()
            c.close()
        if self.stop_requested:
            log.info("Stopped on request after %d env frames; the same command resumes.", self.env_frames)
            return "interrupted"
        if not cfg.benchmark:
            folder.done_file.write_text(f"env_frames={self.env_frames}\n")
        log.info("Training finished: %d env frames.", self.env_frames)
        return "done"

    def _on_signal(self, signum, frame) -> None:
        if self.stop_requested:  # second Ctrl+C: stop now
            raise KeyboardInterrupt
        log.warning("Signal %d received: saving a checkpoint and stopping (again to abort).", signum)
        self.stop_requested = True

    # ---------------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        c, m = self.c, self.monitor
        return {
            "model": c.model.state_dict(),
            "learner": c.learner.state_dict(),
            "env_steps": m.env_steps,
            "env_frames": m.env_frames,
            "train_seconds": self.train_seconds_before + time.time() - self.start_time,
            "best_return": self.best_return,
            "rng": rng_state(),
        }

    def _save(self, kind: str) -> None:
        path = self.ckpt.save(self._state(), self.c.learner.policy_version, self.monitor.env_frames, kind)
        log.info("Saved %s", path)

    def _resume(self) -> None:
        if self.cfg.restart_behavior != "resume":
            return
        state = self.ckpt.load("latest")
        if state is None:
            return
        c = self.c
        c.model.load_state_dict(state["model"])
        c.learner.load_state_dict(state["learner"])
        c.inference.policy_version = c.learner.policy_version
        self.monitor.env_steps, self.monitor.env_frames = int(state["env_steps"]), int(state["env_frames"])
        self.monitor.history.clear()
        self.monitor.history.append((time.time(), self.monitor.env_frames))
        self.env_frames = self.monitor.env_frames
        self.best_return = float(state["best_return"])
        self.train_seconds_before = float(state["train_seconds"])
        set_rng_state(state["rng"])
        log.info("Resumed from env frame %d, policy version %d.", self.env_frames, c.learner.policy_version)

    # ---------------------------------------------------------------------------------------
    def on_step(self, train_stats: dict | None) -> bool:
        """Counts the steps and episodes of the last sampling step, reports, saves; False = stop."""
        c, m, cfg = self.c, self.monitor, self.cfg
        for w in c.workers:
            m.add_steps(w.pop_env_steps(), c.info.frameskip, c.info.num_agents)
            m.add_episodes(w.pop_episodes())
        self.env_frames = m.env_frames
        if train_stats is not None:
            m.train_stats = train_stats
            now = time.time()
            if not cfg.benchmark:
                self._maybe_save(now)
        m.tick()
        elapsed = self.train_seconds_before + time.time() - self.start_time
        if self.stop_requested:
            return False
        return m.env_frames < cfg.train_for_env_steps and elapsed < cfg.train_for_seconds

    def _maybe_save(self, now: float) -> None:
        cfg, m = self.cfg, self.monitor
        if now - self.last_save >= cfg.save_every_sec:
            self.last_save = now
            self._save("checkpoint")
        if cfg.save_milestones_sec > 0 and now - self.last_milestone >= cfg.save_milestones_sec:
            self.last_milestone = now
            self._save("milestone")
        mean = m.mean_return()
        if (
            m.env_frames >= cfg.save_best_after
            and len(m.returns) >= min(10, cfg.stats_avg)
            and mean > self.best_return
        ):
            self.best_return = mean
            self._save("best")


def train(cfg: Any) -> str:
    """Trains `cfg` (see `TrainingRun`) and returns its final status."""
    return TrainingRun(cfg).run()
