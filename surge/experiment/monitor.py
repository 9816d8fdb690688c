"""Console progress and TensorBoard summaries, per policy.

Metric names are namespaced and fixed (docs/metrics.md lists them): `perf/env_frames_per_sec`,
`episode/return_mean`, `losses/policy_loss`, `policy/approx_kl`, ... Units: frames = env steps ×
frameskip; agent steps = env steps × agents. The learner's statistics are logged under the tags its
algorithm declares (`Algorithm.metric_tags`), the policy's own hyper-parameters (`hp_<name>`) under
`hyperparams/<name>`, any other under `train/<name>`. Each policy has its
own TensorBoard folder (`summaries/<policy_id>`) and, with several policies, its own console line.
"""

from __future__ import annotations

import logging
import math
import os
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from surge.cfg.config import Config
from surge.experiment.progress import PROGRESS_LINE, REFRESH_SEC, ProgressBar, bar_wanted
from surge.runtime.policy_stats import PolicyStats, log_train_notes

log = logging.getLogger("surge")

_NO_BUDGET = int(1e10)  # --train_for_env_steps / --train_for_seconds default: no limit


def format_duration(seconds: float) -> str:
    """`seconds` as the progress line's ETA: 45s, 12m 05s, 3h 07m, 2d 05h."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


class Monitor:
    """Tracks throughput and each policy's episode statistics; prints progress and writes summaries.

    Args:
        cfg: run config (stats_avg, report_interval_sec, experiment_summaries_interval, num_policies).
        summary_dirs: one TensorBoard folder per policy, or None to write none (`--no_writes`).
        metric_tags: learner statistic -> TensorBoard tag (the algorithm's `metric_tags`).
        env_frames, env_steps: counters restored from a checkpoint.
    """

    WINDOWS = (10.0, 60.0, 300.0)  # seconds: FPS over the last 10 s, 1 min, 5 min
    MIN_SPAN_SEC = 1.0  # a rate needs two points at least this far apart
    #: once sampling started, `history` keeps points at least this far apart (a newer tick
    #: replaces the newest point until then): about 600 points over the longest window, where a
    #: point per tick (~10 a second in the async placement) grew the main process's memory for
    #: the window's first 5 minutes
    HISTORY_STEP_SEC = 0.5
    #: seconds of sampling before the ETA is estimated ("ETA measuring" until then): a rate from
    #: the first seconds is that of the start-up (an async CartPole run: 4 s without a frame,
    #: then a rate that ramps up; its first line said ETA 25m for a run that took 2m 30s more)
    ETA_MIN_SECONDS = 10.0

    def __init__(
        self,
        cfg: Config,
        summary_dirs: list[Path] | None,
        metric_tags: dict[str, str] | None = None,
        env_frames: int = 0,
        env_steps: int = 0,
    ):
        self.cfg = cfg
        self.env_frames, self.env_steps, self.agent_steps = env_frames, env_steps, 0
        #: a data-parallel rank's share of --train_for_env_steps (its counters are its own); None: all
        self.rank_budget: int | None = None
        self.policies = [PolicyStats(cfg.stats_avg) for _ in range(cfg.num_policies)]
        self.metric_tags = dict(metric_tags or {})
        self.history: deque[tuple[float, int]] = deque()
        now = time.time()
        self.history.append((now, env_frames))
        #: time of the last point before env frames were first counted (the end of start-up);
        #: None until then (`sampling_since`)
        self._sampling_since: float | None = None
        self.last_report = now
        self.last_summary = 0.0
        #: policies whose episode statistics have a summary point: a policy's first episodes get
        #: one at once, not up to `experiment_summaries_interval` later (the early curve)
        self._summarized_episodes: set[int] = set()
        self.train_start: float | None = None  # see start_clock
        self.train_seconds_before = 0.0
        # agent steps whose env reward / observation was non-finite (replaced by 0, not trained
        # on), non-finite episode returns left out of the statistics, and what the log last said
        self.nonfinite_rewards = self.nonfinite_obs = self.nonfinite_returns = 0
        self._nonfinite_reported = (0, 0, 0)
        # env.step exceptions (env rebuilt, episode ended) and replaced worker processes
        self.env_faults = self.worker_restarts = 0
        self.last_env_fault = ""
        self._faults_reported = (0, 0)
        self.writers: list[Any] = []
        self.wandb_run = None
        #: `--progress_bar`'s live bar (drawn from the first tick on), None for the plain lines;
        #: a data-parallel rank > 0 shows none
        self.bar: ProgressBar | None = None
        self.last_bar = 0.0
        mode = getattr(cfg, "progress_bar", "off")
        if bar_wanted(mode) and os.environ.get("RANK", "0") == "0":
            self.bar = ProgressBar(log, force_terminal=mode == "rich")
        if summary_dirs is not None:
            from torch.utils.tensorboard import SummaryWriter

            if cfg.with_wandb:
                self.wandb_run = init_wandb(cfg, summary_dirs[0])
            self.writers = [SummaryWriter(str(d), flush_secs=10) for d in summary_dirs]

    def _tag(self, stat: str) -> str:
        """The TensorBoard tag of learner statistic `stat` (see the module docstring)."""
        if stat in self.metric_tags:
            return self.metric_tags[stat]
        if stat.startswith("hp_"):
            return f"hyperparams/{stat[3:]}"
        return f"train/{stat}"

    # policy 0's statistics, for single-policy callers
    @property
    def returns(self) -> deque[float]:
        return self.policies[0].returns

    @property
    def lengths(self) -> deque[int]:
        return self.policies[0].lengths

    @property
    def episodes(self) -> int:
        return self.policies[0].episodes

    @property
    def train_stats(self) -> dict[str, float]:
        return self.policies[0].train_stats

    def set_train_stats(self, stats: dict[int, dict[str, float]]) -> None:
        """Stores each policy's latest learner statistics (policy id -> statistics); logs what the
        run's log must say of them (`log_train_notes`)."""
        for p, st in stats.items():
            self.policies[p].train_stats = st
            log_train_notes(p, st)

    def add_nonfinite(self, rewards: int, observations: int) -> None:
        """Counts agent steps whose reward / observation from the env was NaN or ±inf (replaced by
        0, not trained on); the first ones are logged at once with the env's name, later ones at the
        next progress line."""
        self.nonfinite_rewards += rewards
        self.nonfinite_obs += observations
        if (rewards or observations) and self._nonfinite_reported == (0, 0, 0):
            self._report_nonfinite()

    def _report_nonfinite(self) -> None:
        now = (self.nonfinite_rewards, self.nonfinite_obs, self.nonfinite_returns)
        if now == self._nonfinite_reported:
            return
        self._nonfinite_reported = now
        log.warning(
            "Env %r returned non-finite values (NaN or inf) so far: %d reward(s) and %d observation(s) "
            "(agent steps; replaced by 0 and not trained on), %d episode return(s) (left out of the "
            "statistics). Check the env's reward and observation code (`surge check-env --env=%s`).",
            self.cfg.env,
            *now,
            self.cfg.env,
        )

    def add_faults(self, env_faults: int, last_env_fault: str, worker_restarts: int) -> None:
        """Counts env faults (an env.step that raised: the env was rebuilt, its episode ended) and
        worker processes replaced after a crash or hang; the first ones are logged at once, later
        ones at the next progress line."""
        self.env_faults += env_faults
        self.worker_restarts += worker_restarts
        if last_env_fault:
            self.last_env_fault = last_env_fault
        if self._faults_reported == (0, 0):
            self._report_faults()

    def _report_faults(self) -> None:
        now = (self.env_faults, self.worker_restarts)
        if now == self._faults_reported:
            return
        previous, self._faults_reported = self._faults_reported, now
        if now[0] != previous[0]:
            log.warning(
                "Env %r raised in env.step %d time(s) so far (each env was rebuilt and its episode "
                "ended; the step is not trained on); last: %s",
                self.cfg.env,
                now[0],
                self.last_env_fault,
            )
        if now[1] != previous[1]:
            log.warning("Worker processes replaced after a crash or hang so far: %d", now[1])

    def add_steps(self, env_steps: int, frameskip: int, num_agents: int) -> None:
        """Counts `env_steps` calls of env.step (each `frameskip` frames, `num_agents` agent steps)."""
        self.env_steps += env_steps
        self.env_frames += env_steps * frameskip
        self.agent_steps += env_steps * num_agents

    def add_episodes(self, episodes: list) -> None:
        """Counts finished episodes (`EpisodeStats`) under the policy that played them."""
        for ep in episodes:
            if not math.isfinite(ep.episode_return):  # a NaN would make every mean NaN
                self.nonfinite_returns += 1
                continue
            ps = self.policies[ep.policy_id]
            ps.returns.append(ep.episode_return)
            ps.lengths.append(ep.episode_length)
            ps.episodes += 1

    def mean_return(self, policy_id: int = 0) -> float:
        """Mean return of policy `policy_id`'s last `stats_avg` episodes (nan before the first)."""
        return self.policies[policy_id].mean_return()

    def fps(self, window: float) -> float:
        """Env frames per second over the last `window` seconds: from the oldest recorded point in
        the window to the newest. When the window holds no older point at least `MIN_SPAN_SEC`
        before the newest (the last tick came late, e.g. after a long learner batch in the serial
        placement), the rate is from the newest point before the window, over the span since it,
        which is then longer than `window`. nan (printed "-") until two points at least
        `MIN_SPAN_SEC` apart exist, so no rate is a division by ~0 s."""
        now_t, now_f = self.history[-1]
        before: tuple[float, int] | None = None  # the newest point older than the window
        for t, f in self.history:
            if now_t - t <= window:
                if now_t - t >= self.MIN_SPAN_SEC:
                    return (now_f - f) / (now_t - t)
                break
            before = (t, f)
        if before is not None:
            return (now_f - before[1]) / (now_t - before[0])
        return float("nan")

    def start_clock(self, start_time: float, seconds_before: float = 0.0) -> None:
        """The training clock for `--train_for_seconds`: training (re)started at `start_time`
        (time.time()) after `seconds_before` seconds trained by the runs this one resumes."""
        self.train_start, self.train_seconds_before = start_time, seconds_before

    def budget_text(self) -> str:
        """The share of `--train_for_env_steps` done and the estimated time left, from the
        longest FPS window with a rate (the recent rate) and `--train_for_seconds` when it ends the
        run first: ` (25.0% of 400000, ETA 5m 00s)`; "" when no budget is set (both at their
        defaults). In a data-parallel run, of this rank's share (`rank_budget`)."""
        cfg = self.cfg
        budget = self.rank_budget if self.rank_budget is not None else cfg.train_for_env_steps
        frames_set = cfg.train_for_env_steps < _NO_BUDGET
        seconds_set = cfg.train_for_seconds < _NO_BUDGET
        if not (frames_set or seconds_set):
            return ""
        parts = []
        if frames_set:
            total = max(1, budget)
            share = "" if self.rank_budget is None else " (this rank's share)"
            parts.append(f"{100.0 * min(self.env_frames, total) / total:.1f}% of {budget}{share}")
        parts.append(f"ETA {self.eta_text()}")
        return f" ({', '.join(parts)})"

    def eta_text(self) -> str:
        """The ETA as the progress line and bar show it: "5m 00s", with " (--train_for_seconds)"
        when that ends the run first; "measuring" while the frame budget's rate is not known yet
        (`eta_rate`), "-" when it is 0 (sampling stalled)."""
        eta, by_seconds = self.eta()
        if math.isfinite(eta):
            return format_duration(eta) + (" (--train_for_seconds)" if by_seconds else "")
        return "measuring" if self.frame_budget() is not None and self.eta_rate() != self.eta_rate() else "-"

    def sampling_since(self) -> float | None:
        """time.time() of the last recorded point before the first env frames were counted (the
        start-up's end); None while no frame has been counted since the first point."""
        if self._sampling_since is None:
            first_frames = self.history[0][1]
            before = self.history[0][0]
            for t, f in self.history:
                if f > first_frames:
                    self._sampling_since = before
                    break
                before = t
        return self._sampling_since

    def eta_rate(self) -> float:
        """Env frames/s the ETA is estimated from: over the longest FPS window, but from no point
        before sampling started (`sampling_since`: start-up is not the run's pace); nan until
        `ETA_MIN_SECONDS` of sampling are recorded."""
        since = self.sampling_since()
        now_t, now_f = self.history[-1]
        if since is None or now_t - since < self.ETA_MIN_SECONDS:
            return float("nan")
        for t, f in self.history:  # the oldest point within the longest window, after `since`
            if t >= since and now_t - t <= self.WINDOWS[-1]:
                return (now_f - f) / (now_t - t) if now_t - t >= self.MIN_SPAN_SEC else float("nan")
        return float("nan")

    def frame_budget(self) -> int | None:
        """The env frames this run (this rank) trains for; None when `--train_for_env_steps` is
        at its default (no limit)."""
        if self.cfg.train_for_env_steps >= _NO_BUDGET:
            return None
        return self.rank_budget if self.rank_budget is not None else self.cfg.train_for_env_steps

    def eta(self) -> tuple[float, bool]:
        """(seconds left, whether `--train_for_seconds` ends the run first): the frames left at
        `eta_rate` (the longest FPS window's, after start-up), or the training seconds left when
        fewer; inf when neither is known."""
        cfg, budget = self.cfg, self.frame_budget()
        eta, by_seconds = float("inf"), False
        if budget is not None and self.env_frames >= budget:
            eta = 0.0  # done: no rate needed (a short run ends before `ETA_MIN_SECONDS`)
        elif budget is not None:
            rate = self.eta_rate()
            if rate > 0:
                eta = max(0, budget - self.env_frames) / rate
        if cfg.train_for_seconds < _NO_BUDGET and self.train_start is not None:
            elapsed = self.train_seconds_before + self.history[-1][0] - self.train_start
            left = max(0.0, cfg.train_for_seconds - elapsed)
            if left < eta:
                eta, by_seconds = left, True
        return eta, by_seconds

    def tick(self, force: bool = False) -> None:
        """Records throughput; prints progress and writes summaries when their intervals are due."""
        now = time.time()
        h = self.history
        if len(h) >= 2 and now - h[-2][0] < self.HISTORY_STEP_SEC and h[-1][1] > h[0][1]:
            h[-1] = (now, self.env_frames)  # (the last start-up point is kept: `sampling_since`)
        else:
            h.append((now, self.env_frames))
        while self.history and now - self.history[0][0] > self.WINDOWS[-1] + 1.0:
            self.history.popleft()
        if self.bar is not None and (force or now - self.last_bar >= REFRESH_SEC):
            self.last_bar = now
            self.update_bar()
        if force or now - self.last_report >= self.cfg.report_interval_sec:
            self.last_report = now
            self._print()
            self._report_nonfinite()
            self._report_faults()
        first_episodes = any(
            ps.returns and p not in self._summarized_episodes for p, ps in enumerate(self.policies)
        )
        due = now - self.last_summary >= self.cfg.experiment_summaries_interval
        if self.writers and (force or due or first_episodes):
            self.last_summary = now
            self._write_summaries()

    def update_bar(self) -> None:
        """Redraws the progress bar from the counters: env frames of the budget, the 10 s rate
        (a longer window's until it has one), the ETA of `eta` and policy 0's mean return."""
        if self.bar is None:
            return
        rate = next((r for r in map(self.fps, self.WINDOWS) if math.isfinite(r)), float("nan"))
        eta, _ = self.eta()
        eta_text = format_duration(eta) if math.isfinite(eta) else self.eta_text()
        self.bar.update(self.env_frames, self.frame_budget(), rate, eta_text, self.mean_return(0))

    @staticmethod
    def _policy_text(ps: PolicyStats) -> str:
        msg = ""
        if ps.returns:
            msg += (
                f"Episode return: {ps.mean_return():.2f}, length: {np.mean(ps.lengths):.1f} env steps "
                f"(last {len(ps.returns)}). "
            )
        lag = ps.train_stats
        if "policy_lag_avg" in lag:
            values = f"{lag['policy_lag_min']:.0f}/{lag['policy_lag_avg']:.1f}/{lag['policy_lag_max']:.0f}"
            if "replay_size" in lag:  # a replay learner's (`ReplayLearner.train_replay`): old samples
                msg += (
                    "Replayed samples' age in policy versions (learner updates since the policy that "
                    f"collected them), min/mean/max over the latest updates' minibatches: {values}."
                )
            else:
                msg += f"Policy lag (min/avg/max): {values}."
        return msg

    def _print(self) -> None:
        f10, f60, f300 = (f"{x:.1f}" if math.isfinite(x) else "-" for x in map(self.fps, self.WINDOWS))
        msg = (
            f"Env frames/s (10 s, 1 min, 5 min): {f10}, {f60}, {f300}. "
            f"Total env frames: {self.env_frames}{self.budget_text()}. "
        )
        # with the bar shown, the console leaves these lines to the log file (PROGRESS_LINE)
        if len(self.policies) == 1:
            log.info(msg + self._policy_text(self.policies[0]), extra=PROGRESS_LINE)
            return
        log.info(msg, extra=PROGRESS_LINE)
        for p, ps in enumerate(self.policies):
            log.info(
                "Policy %d: %s", p, self._policy_text(ps) or "no episode finished yet.", extra=PROGRESS_LINE
            )

    def _write_summaries(self) -> None:
        step = self.env_frames
        fps = self.fps(self.WINDOWS[0])
        for p, (w, ps) in enumerate(zip(self.writers, self.policies, strict=True)):
            if ps.returns:
                self._summarized_episodes.add(p)
            if math.isfinite(fps):
                w.add_scalar("perf/env_frames_per_sec", fps, step)
            w.add_scalar("perf/env_steps", self.env_steps, step)
            if ps.returns:
                w.add_scalar("episode/return_mean", ps.mean_return(), step)
                w.add_scalar("episode/length_mean", float(np.mean(ps.lengths)), step)
                w.add_scalar("episode/count", ps.episodes, step)
            for k, v in ps.train_stats.items():
                w.add_scalar(self._tag(k), v, step)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        for w in self.writers:
            w.flush()
            w.close()
        if self.wandb_run is not None:
            self.wandb_run.finish()


def init_wandb(cfg: Config, summary_dir: Path) -> Any:
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
