"""Console progress and TensorBoard summaries.

Metric names are namespaced and fixed (docs/metrics.md lists them): `perf/env_frames_per_sec`,
`episode/return_mean`, `losses/policy_loss`, `policy/approx_kl`, ... Units: frames = env steps ×
frameskip; agent steps = env steps × agents.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("surge")

#: learner statistic -> TensorBoard tag
TRAIN_TAGS = {
    "loss": "losses/total",
    "policy_loss": "losses/policy_loss",
    "value_loss": "losses/value_loss",
    "exploration_loss": "losses/exploration_loss",
    "kl_loss": "losses/kl_loss",
    "entropy": "policy/entropy",
    "approx_kl": "policy/approx_kl",
    "clip_fraction": "policy/clip_fraction",
    "ratio_mean": "policy/ratio_mean",
    "grad_norm": "losses/grad_norm",
    "lr": "train/learning_rate",
    "adv_mean": "train/advantage_mean",
    "value_mean": "train/value_mean",
    "target_mean": "train/value_target_mean",
    "policy_lag_min": "train/policy_lag_min",
    "policy_lag_avg": "train/policy_lag_avg",
    "policy_lag_max": "train/policy_lag_max",
    "policy_version": "train/policy_version",
}


class Monitor:
    """Tracks throughput and episode statistics; prints progress and writes summaries.

    Args:
        cfg: run config (stats_avg, report_interval_sec, experiment_summaries_interval).
        summary_dir: TensorBoard folder, or None to write none (benchmark mode).
        env_frames, env_steps: counters restored from a checkpoint.
    """

    WINDOWS = (10.0, 60.0, 300.0)  # seconds: FPS over the last 10 s, 1 min, 5 min

    def __init__(self, cfg: Any, summary_dir: Path | None, env_frames: int = 0, env_steps: int = 0):
        self.cfg = cfg
        self.env_frames, self.env_steps, self.agent_steps = env_frames, env_steps, 0
        self.returns: deque[float] = deque(maxlen=cfg.stats_avg)
        self.lengths: deque[int] = deque(maxlen=cfg.stats_avg)
        self.episodes = 0
        self.history: deque[tuple[float, int]] = deque()
        now = time.time()
        self.history.append((now, env_frames))
        self.last_report = now
        self.last_summary = 0.0
        self.train_stats: dict[str, float] = {}
        self.writer = None
        self.wandb_run = None
        if summary_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            if cfg.with_wandb:
                self.wandb_run = init_wandb(cfg, summary_dir)
            self.writer = SummaryWriter(str(summary_dir), flush_secs=10)

    def add_steps(self, env_steps: int, frameskip: int, num_agents: int) -> None:
        """Counts `env_steps` calls of env.step (each `frameskip` frames, `num_agents` agent steps)."""
        self.env_steps += env_steps
        self.env_frames += env_steps * frameskip
        self.agent_steps += env_steps * num_agents

    def add_episodes(self, episodes: list) -> None:
        for ep in episodes:
            self.returns.append(ep.episode_return)
            self.lengths.append(ep.episode_length)
            self.episodes += 1

    def mean_return(self) -> float:
        return float(np.mean(self.returns)) if self.returns else float("nan")

    def fps(self, window: float) -> float:
        """Env frames per second over the last `window` seconds (nan until two points exist)."""
        now_t, now_f = self.history[-1]
        for t, f in self.history:
            if now_t - t <= window:
                return (now_f - f) / max(1e-6, now_t - t) if now_t > t else float("nan")
        return float("nan")

    def tick(self, force: bool = False) -> None:
        """Records throughput; prints progress and writes summaries when their intervals are due."""
        now = time.time()
        self.history.append((now, self.env_frames))
        while self.history and now - self.history[0][0] > self.WINDOWS[-1] + 1.0:
            self.history.popleft()
        if force or now - self.last_report >= self.cfg.report_interval_sec:
            self.last_report = now
            self._print()
        if self.writer and (force or now - self.last_summary >= self.cfg.experiment_summaries_interval):
            self.last_summary = now
            self._write_summaries()

    def _print(self) -> None:
        f10, f60, f300 = (self.fps(w) for w in self.WINDOWS)
        lag = self.train_stats
        msg = (
            f"Env frames/s (10 s, 1 min, 5 min): {f10:.1f}, {f60:.1f}, {f300:.1f}. Total env frames: "
            f"{self.env_frames}. "
        )
        if self.returns:
            msg += (
                f"Episode return: {self.mean_return():.2f}, length: {np.mean(self.lengths):.1f} env steps "
                f"(last {len(self.returns)}). "
            )
        if "policy_lag_avg" in lag:
            msg += f"Policy lag (min/avg/max): {lag['policy_lag_min']:.0f}/{lag['policy_lag_avg']:.1f}/{lag['policy_lag_max']:.0f}."
        log.info(msg)

    def _write_summaries(self) -> None:
        w, step = self.writer, self.env_frames
        w.add_scalar("perf/env_frames_per_sec", self.fps(self.WINDOWS[0]), step)
        w.add_scalar("perf/env_steps", self.env_steps, step)
        if self.returns:
            w.add_scalar("episode/return_mean", self.mean_return(), step)
            w.add_scalar("episode/length_mean", float(np.mean(self.lengths)), step)
            w.add_scalar("episode/count", self.episodes, step)
        for k, v in self.train_stats.items():
            if k in TRAIN_TAGS:
                w.add_scalar(TRAIN_TAGS[k], v, step)

    def close(self) -> None:
        if self.writer:
            self.writer.flush()
            self.writer.close()
        if self.wandb_run is not None:
            self.wandb_run.finish()


def init_wandb(cfg: Any, summary_dir: Path) -> Any:
    """Starts (or resumes, with the id kept in the experiment folder) a W&B run that mirrors every
    TensorBoard summary (`sync_tensorboard`), as Sample Factory 2 does."""
    import wandb

    id_file = summary_dir.parent.parent / "wandb_run_id"
    run_id = id_file.read_text().strip() if id_file.exists() else uuid.uuid4().hex[:12]
    id_file.parent.mkdir(parents=True, exist_ok=True)
    id_file.write_text(run_id)
    return wandb.init(
        project=cfg.wandb_project,
        entity=cfg.wandb_user or None,
        group=cfg.wandb_group or cfg.env,
        job_type=cfg.wandb_job_type,
        tags=list(cfg.wandb_tags) or None,
        name=cfg.experiment,
        id=run_id,
        resume="allow",
        config=cfg.to_dict(),
        sync_tensorboard=True,
        dir=str(summary_dir.parent.parent),
    )
