"""One training run from start to finish: experiment folder, resume, the placement's loop,
progress, checkpoints, clean stop on Ctrl+C / SIGTERM, and the `done` marker."""

from __future__ import annotations

import logging
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any

from surge.app.notes import config_notes
from surge.app.space_defaults import space_default_notes
from surge.cfg.budget import benchmark_end, no_end_note
from surge.cfg.cli import default_notes, resume_notes, save_cfg
from surge.cfg.config import Config
from surge.cfg.policy_roles import learning_policies
from surge.distributed.ray_placement import RayPlacement
from surge.envs.registry import env_notes
from surge.errors import ChildProcessFailed
from surge.evaluation.train_eval import TrainEvaluator, make_train_evaluator
from surge.experiment.git_info import record_code_revision
from surge.experiment.monitor import Monitor
from surge.experiment.report import finish_report, update_report
from surge.learning.algorithm import get_algorithm
from surge.population.pbt import PopulationBasedTraining, replaced
from surge.population.roles import apply_frozen_sources
from surge.population.self_play import SelfPlayController
from surge.runtime.async_placement import AsyncPlacement
from surge.runtime.best_checkpoint import BestCheckpoints
from surge.runtime.checkpoint import CheckpointManager, log_no_checkpoint
from surge.runtime.experiment_folder import ExperimentFolder, close_log_files, run_log_file, setup_logging
from surge.runtime.final_checkpoints import final_checkpoints_written
from surge.runtime.placement import Placement
from surge.runtime.process_setup import retain_freed_memory
from surge.runtime.ranks import local_env_step_budget, rank_info, rank_seed
from surge.runtime.resume_line import resume_line
from surge.runtime.serial import SerialPlacement
from surge.runtime.stop_signals import SAME_STOP_SEC, STOP_SIGNALS, StopAborted, StopRequests

log = logging.getLogger("surge")

MIN_RATE_SECONDS = 1.0  # a throughput over a shorter span is not reported (it would be noise)


def make_placement(
    cfg: Config,
    ckpts: list[CheckpointManager],
    resume_states: list[dict[str, Any] | None],
    sampler_state_file: Path | None = None,
) -> Placement:
    """`SerialPlacement` for `--serial_mode=True` (saving and resuming its sampler's state in
    `sampler_state_file` when given), `RayPlacement` for `--distributed=ray`, else the
    multi-process `AsyncPlacement`."""
    if cfg.serial_mode:
        retain_freed_memory()  # this process samples and learns (the async children do it themselves)
        return SerialPlacement(cfg, ckpts, resume_states, sampler_state_file)
    if cfg.distributed == "ray":  # the learner here, sampler nodes on a Ray cluster
        return RayPlacement(cfg, ckpts, resume_states)
    return AsyncPlacement(cfg, ckpts, resume_states)


class TrainingRun:
    """Runs `cfg` in its experiment folder; `run()` returns the final status string.

    Status: "done" (budget reached), "interrupted" (Ctrl+C / SIGTERM; a checkpoint was saved),
    "already_done" (the folder holds a finished run), "failed" (a child process crashed: its
    traceback is in the log, the last checkpoint was saved if the learner was alive; or a policy's
    final checkpoint could not be written, e.g. its weights went NaN: the log names the tensors,
    and no `done` is written).
    """

    def __init__(self, cfg: Config):
        self.cfg = cfg
        #: a data-parallel run (torchrun): this rank; only rank 0 writes the experiment folder,
        #: each rank samples its share of the budget with its own env seeds (docs/distributed.md)
        self.rank = rank_info()
        if self.rank.distributed:
            cfg.seed = rank_seed(cfg.seed, self.rank.rank)
        self.writes = not cfg.no_writes and self.rank.is_main
        #: the env frames this rank samples (train_for_env_steps is all ranks' budget together)
        self.budget = local_env_step_budget(cfg.train_for_env_steps, self.rank.world_size)
        self.folder = ExperimentFolder(cfg)
        #: the Ctrl+C / SIGTERM received and what each means (`surge.runtime.stop_signals`)
        self.stops = StopRequests()
        self.best = BestCheckpoints(cfg, cfg.num_policies)
        self.train_seconds_before = 0.0
        self.first_frames: tuple[float, int] | None = None  # (time, env_frames) of the first report
        self.summary: dict[str, float] = {}
        self.global_env_frames = 0  # data parallel: all ranks' env frames at the last training round
        self.monitor_frames_at_last_round = 0  # and this rank's then
        self.pbt: PopulationBasedTraining | None = None
        self.self_play: SelfPlayController | None = None  # with --self_play=True, set at the start
        self.evaluator: TrainEvaluator | None = None  # with --eval_every_env_frames, set at the start

    def run(self) -> str:
        """Trains until the budget, a stop signal or a crash of a child process; see the class doc.
        A start that fails (raises, or a child crashes) before the first env step, in a folder that
        had no cfg.json, removes the cfg.json and checkpoints it wrote (the log stays): the next
        start begins afresh instead of resuming the failed start's config."""
        had_cfg = self.folder.cfg_file.exists()
        status = "failed"
        try:
            status = self._run()
            return status
        finally:
            if status == "failed" and self.first_frames is None and not had_cfg and self.writes:
                removed = self.folder.clear_previous_run()
                if self.folder.cfg_file.exists():
                    self.folder.cfg_file.unlink()
                    removed.append(self.folder.cfg_file)
                if removed:
                    log.info(
                        "The start failed before the first env step: removed %s, so the next start begins afresh.",
                        ", ".join(str(p.relative_to(self.folder.root)) for p in removed),
                    )
            try:
                finish_report(self, status)
            finally:
                close_log_files()  # a later run in this process must not log into this run's file

    def _run(self) -> str:
        cfg, folder = self.cfg, self.folder
        removed = []
        if cfg.restart_behavior == "restart" and self.writes:
            folder.wipe()
        elif cfg.restart_behavior == "overwrite" and self.writes:
            removed = folder.clear_previous_run()
        setup_logging(run_log_file(cfg))
        for note in resume_notes(cfg):
            log.warning(note)
        for note in config_notes(cfg):
            log.warning(note)
        for note in [*space_default_notes(cfg), *default_notes(cfg), *env_notes(cfg)]:
            log.info(note)
        sampler_only = get_algorithm(cfg.algo).capabilities.sampler_only
        if (no_end := no_end_note(cfg)) is not None and not sampler_only:
            log.info(no_end)
        if sampler_only:
            log.info(
                "%s samples %d env frames: the lower of --train_for_env_steps and "
                "--sample_env_frames (here %s)%s.",
                cfg.algo,
                cfg.train_for_env_steps,
                "--sample_env_frames"
                if cfg.train_for_env_steps == cfg.sample_env_frames
                else "--train_for_env_steps",
                f", or stops after --train_for_seconds={cfg.train_for_seconds}"
                if cfg.train_for_seconds < 1e10
                else "",
            )
        if removed:
            log.info(
                "--restart_behavior=overwrite: removed the previous run's %s",
                ", ".join(str(p.relative_to(folder.root)) for p in removed),
            )
        if folder.done_file.exists() and cfg.restart_behavior == "resume":
            log.info(
                "Experiment %s already finished (%s exists); nothing to do. Pass --restart_behavior=restart "
                "to train it again, or raise --train_for_env_steps and delete the done file.",
                folder.root,
                folder.done_file,
            )
            return "already_done"
        earlier_run = folder.cfg_file.exists()  # a run in this folder before (resume only)
        if self.writes:
            save_cfg(cfg, folder.cfg_file)
            record_code_revision(folder.root)
        log.info("Experiment folder: %s", folder.root)
        P = cfg.num_policies
        self.ckpts = [CheckpointManager(folder.checkpoints(i), cfg.keep_checkpoints, i) for i in range(P)]
        for ckpt in self.ckpts if self.writes else ():
            partial = ckpt.remove_partial_writes()
            if partial:
                log.info(
                    "Removed %d unfinished checkpoint write(s) of a killed run (%s); complete "
                    "checkpoints are never partial.",
                    len(partial),
                    ", ".join(p.name for p in partial),
                )
        resume = cfg.restart_behavior == "resume"
        self.learning = learning_policies(cfg)  # frozen policies have no checkpoints
        # a damaged checkpoint is moved aside (`<name>.damaged`) by the run that writes this folder
        resume_states = [
            c.load("latest", move_damaged=self.writes) if resume and i in self.learning else None
            for i, c in enumerate(self.ckpts)
        ]
        if resume and self.learning and all(resume_states[i] is None for i in self.learning):
            log_no_checkpoint(self.ckpts, folder.root, earlier_run, cfg.save_every_sec)
        if self.rank.rank > 0:
            # ranks > 0 read rank 0's checkpoint for its counters (the weights come by broadcast):
            # not its random streams, or every rank would sample with the same noise from here on
            for state in resume_states:
                if state is not None:
                    state.pop("rng", None)
        summaries = None if not self.writes else [folder.summaries(i) for i in range(P)]
        self.monitor = m = Monitor(cfg, summaries, get_algorithm(cfg.algo).metric_tags)
        if self.rank.distributed:  # this rank counts its own env frames against its share
            m.rank_budget = self.budget
        self._restore_counters(resume_states)
        self.frames_at_start = m.env_frames  # --benchmark counts the frames from here (Sample Factory's)
        self.placement = p = make_placement(
            cfg, self.ckpts, resume_states, None if not self.writes else folder.sampler_state_file
        )
        # kept until every child stopped and the final checkpoint is written: a stop signal that
        # arrives meanwhile (GNU timeout's second one) must not kill this process by default
        old_handlers = {s: signal.signal(s, self._on_signal) for s in STOP_SIGNALS}
        finished = failed = saving = False
        try:
            # before the first step: a resumed run's schedules (exploration, learning rate) continue from its frame
            p.set_env_frames(m.env_frames)
            # before the start: workers that step while this process is slow to go on (a loaded
            # machine) must not pass the budget (an async CartPole run once ended 348 frames past it)
            p.limit_env_frames(self.budget - m.env_frames)
            p.start()
            apply_frozen_sources(
                cfg, p, folder.root if self.writes else None, any(s is not None for s in resume_states)
            )
            if cfg.self_play:
                self.self_play = SelfPlayController(
                    cfg,
                    None if cfg.no_writes else folder.root / "self_play",
                    m.writers[0] if m.writers else None,
                )
                self.self_play.start(p, resume_states[0] is not None, m.env_frames)
            p.set_progress(m.tick)
            self.pbt = self._make_pbt()
            self.evaluator = make_train_evaluator(self)
            self.start_time = time.time()
            m.start_clock(self.start_time, self.train_seconds_before)
            self.last_save = self.last_milestone = self.start_time
            m.history.clear()
            m.history.append((self.start_time, m.env_frames))
            while self._step():
                pass
            self.end_time = time.time()
            finished = not self.stop_requested
        except ChildProcessFailed as e:
            log.error("Stopping: %s", e)
            failed = True
        finally:
            try:
                m.tick(force=True)  # the budget's line at once, before the save and the close
                if self.writes and hasattr(self, "start_time"):
                    # an algorithm without a learner has no weights to save
                    saving = get_algorithm(cfg.algo).trains and not cfg.sampler_only
                    self._save_all("final")
            finally:
                written, late = False, []
                try:
                    # a data-parallel rank leaves its process group here, if not yet; the episodes
                    # finished after the last step go into the final progress line
                    m.add_episodes(late := p.close().episodes)
                    written = all(i in p.final_written for i in self.learning)
                    if self.pbt is not None:  # the final checkpoints may complete a replacement
                        self.pbt.maybe_release(p.checkpoints_written)
                finally:
                    if late:  # again with the episodes finished after the last step
                        m.tick(force=True)
                    try:
                        if self.evaluator is not None:
                            # after the placement's close: the evaluator process has stopped, so
                            # every result it sent is in the queue (one sent while an earlier
                            # close read it was lost, though its best checkpoint was written)
                            self.evaluator.close()
                            if finished and not failed and saving and written:
                                self.evaluator.evaluate_final()  # --save_best_by_eval (surge.evaluation.train_eval)
                    finally:
                        for s, h in old_handlers.items():
                            signal.signal(s, h)
                        m.close()
        self._summarise()
        if failed:
            return "failed"
        if saving and not final_checkpoints_written(p, self.learning, self.ckpts, folder.root):
            return "failed"
        if not finished:
            log.info(
                "Stopped on request after %d env frames%s.",
                m.env_frames,
                "" if cfg.no_writes else "; the same command resumes",
            )
            return "interrupted"
        if self.writes:
            folder.done_file.write_text(f"env_frames={m.env_frames}\n")
        log.info("Training finished: %d env frames.", m.env_frames)
        return "done"

    def _summarise(self) -> None:
        """Throughput from the first env steps to the end (start-up excluded), in `self.summary`;
        no rate when that span is shorter than `MIN_RATE_SECONDS` (it would not be a real one)."""
        m = self.monitor
        if self.first_frames is None:
            return
        t0, f0 = self.first_frames
        seconds = getattr(self, "end_time", time.time()) - t0
        measurable = seconds >= MIN_RATE_SECONDS
        self.summary = {
            "total_env_frames": m.env_frames,
            "env_frames": m.env_frames - f0,
            "seconds": seconds,
            "env_frames_per_sec": (m.env_frames - f0) / seconds if measurable else float("nan"),
        }
        if not measurable:
            log.info(
                "Throughput: %d env frames in %.2f s: too short to measure a rate (under %.0f s from the "
                "first env steps on)",
                self.summary["env_frames"],
                seconds,
                MIN_RATE_SECONDS,
            )
        else:
            log.info(
                "Throughput: %d env frames in %.1f s = %.1f env frames/s (from the first env steps on)",
                self.summary["env_frames"],
                seconds,
                self.summary["env_frames_per_sec"],
            )
        if self.rank.distributed and self.global_env_frames and m.env_frames:
            # the ranks sample at the same pace (rounds keep them together): the global rate is this rank's
            # scaled by global / local frames at the last round (the frames even in a run too short for a rate)
            share = self.global_env_frames / max(1, self.monitor_frames_at_last_round)
            self.summary["global_env_frames"] = self.global_env_frames
            self.summary["global_env_frames_per_sec"] = self.summary["env_frames_per_sec"] * share
            log.info(
                "Data parallel, %d ranks: all ranks together had sampled %d env frames at the last "
                "training round (this rank: %d)%s.",
                self.rank.world_size,
                self.global_env_frames,
                self.monitor_frames_at_last_round,
                f"; about {self.summary['global_env_frames_per_sec']:.1f} env frames/s together"
                if measurable
                else "",
            )

    @property
    def stop_requested(self) -> bool:
        """Whether a Ctrl+C or SIGTERM asked this run to stop."""
        return self.stops.requested

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        meaning = self.stops.note(signum)
        if meaning == "same":  # GNU timeout's second signal (to the group), a repeated kill: one stop
            return
        if meaning == "abort":
            log.warning("Signal %d received again: aborting without the final checkpoint.", signum)
            raise StopAborted(signum)
        again = f"again after {SAME_STOP_SEC:g} s to abort"
        if self.cfg.no_writes:  # --no_writes (surge bench) writes no checkpoint
            log.warning("Signal %d received: stopping; --no_writes saves no checkpoint (%s).", signum, again)
        else:
            log.warning("Signal %d received: saving a checkpoint and stopping (%s).", signum, again)
        placement = getattr(self, "placement", None)
        if placement is not None:  # a batch in training is left at its next optimizer step
            placement.interrupt()

    def _restore_counters(self, states: list[dict[str, Any] | None]) -> None:
        """The run's counters from the latest checkpoints: env steps and frames, seconds trained
        (the furthest of the policies' checkpoints), each policy's best return and its recent
        episodes (the reported means continue from the stop instead of restarting from the first
        episodes to finish after it, which are the shortest: in Breakout the lowest-scoring)."""
        found = [s for s in states if s is not None]
        if not found:
            return
        m = self.monitor
        last = max(found, key=lambda s: int(s["env_frames"]))
        m.env_steps, m.env_frames = int(last["env_steps"]), int(last["env_frames"])
        self.train_seconds_before = float(last["train_seconds"])
        for p, state in enumerate(states):
            if p not in self.learning:
                continue
            if state is not None:
                self.best.restore(p, state)
                ps = m.policies[p]
                ps.returns.extend(float(r) for r in state.get("episode_returns", ()))
                ps.lengths.extend(int(n) for n in state.get("episode_lengths", ()))
                ps.episodes = int(state.get("episodes", 0))
            else:
                log.warning("Policy %d has no checkpoint to resume from: it starts from scratch.", p)
        log.info("%s", resume_line(states, m.env_frames, self.learning))

    def _counters(self, policy_id: int = 0) -> dict[str, Any]:
        """What a checkpoint of policy `policy_id` stores besides its model and learner: the run's
        counters, the policy's best mean return and its last `stats_avg` episodes (returns in env
        reward units, lengths in env steps) and episode count."""
        m = self.monitor
        ps = m.policies[policy_id]
        return {
            "env_steps": m.env_steps,
            "env_frames": m.env_frames,
            "train_seconds": self.train_seconds_before + time.time() - self.start_time,
            "best_return": self.best.best[policy_id],  # of `best_metric` (the name kept for old checkpoints)
            "best_metric": self.cfg.save_best_metric,
            "episode_returns": list(ps.returns),
            "episode_lengths": list(ps.lengths),
            "episodes": ps.episodes,
        }

    def _step(self) -> bool:
        """One placement step: count, report, save; returns False to stop."""
        cfg, m, p = self.cfg, self.monitor, self.placement
        report = p.step()
        if self.first_frames is None and report.env_steps:
            self.first_frames = (time.time(), m.env_frames)
        m.add_steps(report.env_steps, p.frameskip, p.num_agents)
        m.add_episodes(report.episodes)
        if self.pbt is not None:
            self.pbt.observe(report.episodes, p.frameskip)
            if replaced(self.pbt.step(m.env_frames, p.checkpoints_written)) and self.writes:
                self._save_all("checkpoint")  # copied weights; PBT's state waits until they are on disk
        if self.self_play is not None and report.episodes:
            self.self_play.on_episodes(report.episodes, m.env_frames)
        if report.nonfinite_rewards or report.nonfinite_obs:
            m.add_nonfinite(report.nonfinite_rewards, report.nonfinite_obs)
        if report.env_faults or report.worker_restarts:
            m.add_faults(report.env_faults, report.last_env_fault, report.worker_restarts)
        p.set_env_frames(m.env_frames)
        if report.train_stats:
            m.set_train_stats(report.train_stats)
            if self.rank.distributed and "global_env_frames" in report.train_stats.get(0, {}):
                self.global_env_frames = int(report.train_stats[0]["global_env_frames"])
                self.monitor_frames_at_last_round = int(report.train_stats[0]["local_env_frames"])
            if self.writes:
                self._maybe_save(time.time())
        m.tick()
        if self.evaluator is not None and not self.stop_requested:  # Ctrl+C starts no evaluation
            self.evaluator.step(m.env_frames)
        if self.stop_requested:
            return False
        if report.data_parallel_stopped:  # another rank stopped training
            log.info("Data parallel: another rank stopped training; this rank stops too.")
            return False
        if cfg.score_to_win is not None and report.episodes and self._won():
            return False
        if self.evaluator is not None and self.evaluator.won:  # --eval_score_to_win, logged there
            return False
        if (end := benchmark_end(cfg, m.env_frames - self.frames_at_start, m.agent_steps)) is not None:
            log.info("%s", end)
            return False
        elapsed = self.train_seconds_before + time.time() - self.start_time
        return m.env_frames < self.budget and elapsed < cfg.train_for_seconds

    def _won(self) -> bool:
        """`--score_to_win`: True (and says so in the log) once the first learning policy's last
        `stats_avg` episodes (a full window; policy 0 unless it is frozen) have a mean true return >=
        score_to_win (rl_games' score_to_win)."""
        cfg, score = self.cfg, self.cfg.score_to_win
        pid = self.learning[0] if self.learning else 0
        ps = self.monitor.policies[pid]
        if score is None or len(ps.returns) < cfg.stats_avg or ps.mean_return() < score:
            return False
        log.info(
            "Stopping: policy %d's mean return over its last %d episodes is %.3f >= --score_to_win=%s "
            "(after %d env frames).",
            pid,
            len(ps.returns),
            ps.mean_return(),
            cfg.score_to_win,
            self.monitor.env_frames,
        )
        return True

    def _make_pbt(self) -> PopulationBasedTraining | None:
        """The PBT controller with `--with_pbt` (resumed from `pbt_state.json`), after it sent
        every policy its hyper-parameters; None without."""
        cfg, folder = self.cfg, self.folder
        if not cfg.with_pbt:
            return None
        state, log_file = (None, None) if cfg.no_writes else (folder.pbt_state_file, folder.pbt_log_file)
        pbt = PopulationBasedTraining(cfg, self.placement.send_command, state, log_file, self.monitor.writers)
        pbt.start(self.monitor.env_frames)
        return pbt

    def _save_all(self, kind: str) -> None:
        update_report(self, kind)
        for i in self.learning:
            self.placement.save(kind, self._counters(i), policy_id=i)
        if self.pbt is not None:  # after the checkpoints: see the replacement in `_step`
            self.pbt.save()
        if self.self_play is not None:
            self.self_play.checkpoint(self.monitor.env_frames)

    def _maybe_save(self, now: float) -> None:
        cfg, m, p = self.cfg, self.monitor, self.placement
        if now - self.last_save >= cfg.save_every_sec:
            self.last_save = now
            self._save_all("checkpoint")
        if cfg.save_milestones_sec > 0 and now - self.last_milestone >= cfg.save_milestones_sec:
            self.last_milestone = now
            self._save_all("milestone")
        if cfg.save_best_by_eval:  # the evaluations choose the best checkpoint (surge.evaluation)
            return
        for i in self.best.due(now, m.env_frames, m.policies, self.learning):
            p.save("best", self._counters(i), policy_id=i)


def train(cfg: Config) -> str:
    """Trains `cfg` (see `TrainingRun`) and returns its final status."""
    return TrainingRun(cfg).run()
