"""Evaluation during training (`--eval_every_env_frames`, docs/evaluation.md), the main
process's side: decides when to evaluate, runs the evaluation inline (serial placement) or asks
the evaluator process (async placement, `surge.evaluation.eval_process`) and reports each result:
a log line, and in TensorBoard, per policy in summaries/{i}, `eval/return_mean`,
`eval/return_std`, `eval/length_mean` (and `eval/<name>_mean` with `--eval_stat=name`) at x = the
env frames when the weights were read.

Every `eval_every_env_frames` env frames (at N, 2N, ... counted from frame 0, never at the start)
each learning policy's current weights play `--eval_episodes` full episodes. The env frames
reported with a result are the run's when the weights were read (in the async placement, by the
evaluator process once it takes the request). In the async
placement an evaluation that is still running when the next is due makes that one skipped (the
next request goes out once the results are in): training never waits for evaluation. An evaluator
process that crashed or hung is replaced (`surge.runtime.supervision`); the evaluation it was
playing is then lost, and the next one is requested when it falls due.

With `--save_best_by_eval`, a run that finishes (its budget, `--train_for_env_steps` or
`--train_for_seconds`, or a stop condition: `--score_to_win`, `--eval_score_to_win`, another
data-parallel rank stopping; not Ctrl+C or SIGTERM, not a failure) has its final weights evaluated
once more, in the main process from the final checkpoint, unless they were the last weights
evaluated: otherwise the best checkpoint could be an early one whenever the evaluations fell behind
the training (a starved evaluator skips those that fall due while it plays) or the last one fell
due after the budget.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
from pathlib import Path
from queue import Empty
from typing import Any

import torch

from surge.evaluation.best_by_eval import BestByEval
from surge.evaluation.episodes import EpisodePlayer
from surge.evaluation.eval_process import EvaluatorContext, evaluator_process_main
from surge.learning.algorithm import get_algorithm
from surge.runtime.components import torch_device
from surge.runtime.pipe_queue import PipeQueue

log = logging.getLogger("surge")


class TrainEvaluator:
    """Evaluation during training of one run (see the module docstring).

    Args:
        run: the `TrainingRun` (its cfg, placement, learning policies, monitor's TensorBoard
            writers, experiment folder, counters of a checkpoint).
    """

    def __init__(self, run: Any):
        self.run = run
        cfg = self.cfg = run.cfg
        self.every = int(cfg.eval_every_env_frames)
        self.policies = list(run.learning)
        self.next_at = (run.monitor.env_frames // self.every + 1) * self.every
        self.pending = 0  # async: results still expected for request `request_id`
        self.request_id = 0  # async: the latest request's number (results carry it)
        self.incarnation = 0  # async: the evaluator process's, when the latest request was sent
        self.requested_at = 0  # async: the env frames of the latest request
        self.skipped = 0  # async: evaluations not requested because one was running
        self.resume = cfg.restart_behavior == "resume"
        self.player: Any = None
        #: whether the episodes take the deterministic action: --eval_deterministic, or always for
        #: an algorithm with its own `eval_act` (DQN's greedy action, SAC/TD3/DDPG's mean)
        self.deterministic = cfg.eval_deterministic or get_algorithm(cfg.algo).eval_act is not None
        self.best: Any = None
        #: policy id -> the policy version of its last evaluation reported
        self.evaluated: dict[int, int] = {}
        #: `--eval_score_to_win`: env frames of the first evaluation at or above it, per policy
        self.reached: dict[int, int] = {}
        #: every learning policy has reached `--eval_score_to_win`: the run stops (`TrainingRun`)
        self.won = False
        if cfg.serial_mode:
            self._start_inline()
        else:
            self._start_process()

    def _start_inline(self) -> None:
        cfg = self.cfg
        self.player = EpisodePlayer(cfg, torch_device(cfg))
        if cfg.save_best_by_eval:
            folder = self.run.folder
            self.best = BestByEval(cfg, {p: folder.checkpoints(p) for p in self.policies}, self.resume)

    def _start_process(self) -> None:
        placement = self.run.placement
        self.requests, self.results = PipeQueue(), PipeQueue()  # kill-safe (surge.runtime.pipe_queue)
        heartbeat = torch.zeros(1, dtype=torch.float64).share_memory_()
        ctx = EvaluatorContext(placement.shared, self.requests, self.results, heartbeat, self.resume)
        # a replacement keeps the best scores its predecessor wrote (`BestByEval`)
        again = dataclasses.replace(ctx, resume=True)
        placement.spawn_extra("evaluator", evaluator_process_main, ctx, heartbeat, again)

    def step(self, env_frames: int) -> None:
        """Called by the run after each placement step: reports finished evaluations and starts
        the one that is due (inline in the serial placement: this call then takes as long as the
        episodes)."""
        if self.player is None:
            self._collect()
        if env_frames < self.next_at:
            return
        if self.pending:  # async: the previous evaluation is still running
            self.skipped += 1
            self.next_at = (env_frames // self.every + 1) * self.every
            return
        self.next_at = (env_frames // self.every + 1) * self.every
        counters = {p: self.run._counters(p) for p in self.policies}
        if self.player is None:
            self.request_id += 1
            self.requested_at = env_frames
            self.requests.put((self.request_id, env_frames, counters))
            self.pending = len(self.policies)
            self.incarnation = self.run.placement.extras["evaluator"].incarnation
            return
        for p in self.policies:
            weights, version = self.run.placement.policy_weights(p)
            self.player.model.load_state_dict(weights)
            # Ctrl+C (or SIGTERM) cuts the episodes short; a partial evaluation is not reported
            result = self.player.evaluate(p, version, env_frames, stop=lambda: self.run.stop_requested)
            if self.run.stop_requested:
                return
            path = None
            if self.best is not None:
                path = self.best.offer(p, weights, version, result.return_mean, counters[p])
            self._report(result, path)

    def _collect(self) -> None:
        """Reports the results that arrived. Those of an earlier request (answered by a replaced
        evaluator's successor) are reported too, but only the latest request's count as its
        answers; a request whose evaluator was replaced since is no longer awaited."""
        extra = self.run.placement.extras.get("evaluator")
        if self.pending and extra is not None and extra.incarnation != self.incarnation:
            log.warning(
                "The evaluator process was replaced: its evaluation at env frame %d is lost (%d "
                "result(s) missing); the next is requested when it falls due.",
                self.requested_at,
                self.pending,
            )
            self.pending = 0
        while True:
            try:
                request_id, result, path = self.results.get(block=False)
            except Empty:
                return
            if request_id == self.request_id and self.pending:
                self.pending -= 1
            if result is None:  # the evaluator could not read this policy's weights: nothing to report
                continue
            self._report(result, Path(path) if path else None)

    def evaluate_final(self) -> None:
        """`--save_best_by_eval` at the end of a run that finished (see the module docstring):
        plays each learning policy's final checkpoint unless its version was the last one
        evaluated, reports the result as any evaluation's (log line, TensorBoard) and offers its
        weights to the best checkpoint. Call after the placement closed (its final checkpoints are
        written) and before the monitor's TensorBoard writers close.

        Never raises: the run is done whatever happens here. Ctrl+C or SIGTERM cuts it short (the
        episodes stop within `STOP_CHECK_STEPS` env steps) and an error is logged; either way the
        best checkpoint stays as it was for the policies not yet played."""
        if not self.cfg.save_best_by_eval:
            return
        stopped = False

        def on_signal(signum: int, frame: Any) -> None:
            nonlocal stopped
            stopped = True

        old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        player = None
        try:
            if self.player is None:  # async: results that arrived since `close` (the evaluator has stopped)
                self._collect()
            todo = self._final_todo()
            if not todo:
                return
            run = self.run
            player = EpisodePlayer(self.cfg, torch_device(self.cfg))
            # async: the evaluator process wrote the best so far; its eval return is on disk
            best = self.best or BestByEval(
                self.cfg, {p: run.folder.checkpoints(p) for p in self.policies}, True
            )
            for p, version, state in todo:
                frames = int(state["env_frames"])
                log.info(
                    "Evaluating policy %d's final weights (policy version %d, env frame %d) for "
                    "--save_best_by_eval: %s.",
                    p,
                    version,
                    frames,
                    (
                        f"the last evaluation reported played version {self.evaluated[p]}"
                        if p in self.evaluated
                        else "no evaluation was reported during the run"
                    )
                    + (f"; {self.skipped} evaluation(s) were skipped while one ran" if self.skipped else ""),
                )
                self.skipped = 0
                player.model.load_state_dict(state["model"])
                result = player.evaluate(p, version, frames, stop=lambda: stopped)
                if stopped:
                    log.warning(
                        "The final evaluation was cut short by a signal: the best checkpoint stays as it was."
                    )
                    return
                counters = run._counters(p)  # the keys of a checkpoint's counters, valued as the final one's
                counters.update({k: state[k] for k in counters if k in state})
                path = best.offer(p, state["model"], version, result.return_mean, counters)
                self._report(result, path, final=True)
        except Exception:  # noqa: BLE001 - the run is done: report, never fail it here
            log.exception("The final evaluation failed; the best checkpoint stays as it was.")
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            if player is not None:
                player.close()

    def _final_todo(self) -> list[tuple[int, int, dict[str, Any]]]:
        """(policy id, policy version, final checkpoint state) of each learning policy whose final
        weights were not the last evaluated."""
        todo = []
        for p in self.policies:
            state = self.run.ckpts[p].load()
            if state is None:
                continue
            version = int(state.get("learner", {}).get("policy_version", -1))
            if self.evaluated.get(p) == version:
                log.info("Policy %d's final weights (policy version %d) were evaluated already.", p, version)
                continue
            todo.append((p, version, state))
        return todo

    def _report(self, result: Any, best_path: Path | None, final: bool = False) -> None:
        """Log line and TensorBoard scalars of one result; `final`: the run's end (`evaluate_final`),
        which stops nothing (no `--eval_score_to_win` check)."""
        self.evaluated[result.policy_id] = result.policy_version
        log.info(
            "Eval policy %d at env frame %d (policy version %d): return %.2f ± %.2f over %d "
            "episodes (%s)%s, length %.1f env steps, %.1f s%s%s",
            result.policy_id,
            result.env_frames,
            result.policy_version,
            result.return_mean,
            result.return_std,
            len(result.returns),
            "deterministic" if self.deterministic else "sampled",
            self._stat_text(result),
            result.length_mean,
            result.seconds,
            f"; {self.skipped} evaluation(s) skipped while it ran" if self.skipped else "",
            f"; new best: saved {best_path.name}" if best_path is not None else "",
        )
        self.skipped = 0
        if not final:
            self._check_won(result)
        writers = self.run.monitor.writers
        if writers:
            w = writers[result.policy_id]
            w.add_scalar("eval/return_mean", result.return_mean, result.env_frames)
            w.add_scalar("eval/return_std", result.return_std, result.env_frames)
            w.add_scalar("eval/length_mean", result.length_mean, result.env_frames)
            if result.stat_mean is not None:
                w.add_scalar(f"eval/{self.cfg.eval_stat}_mean", result.stat_mean, result.env_frames)
            w.flush()

    def _check_won(self, result: Any) -> None:
        """`--eval_score_to_win`: records the first evaluation of each learning policy with a mean
        return >= the flag's value (a log line each) and sets `won` once every learning policy has
        one (with one policy: Stable-Baselines3's StopTrainingOnRewardThreshold)."""
        score = self.cfg.eval_score_to_win
        pid = result.policy_id
        if score is None or self.won or pid in self.reached or result.return_mean < score:
            return
        self.reached[pid] = result.env_frames
        log.info(
            "Policy %d's evaluation at env frame %d has a mean return of %.3f over %d episodes >= "
            "--eval_score_to_win=%s (%d of %d learning policies so far).",
            pid,
            result.env_frames,
            result.return_mean,
            len(result.returns),
            score,
            len(self.reached),
            len(self.policies),
        )
        if len(self.reached) == len(self.policies):
            self.won = True
            at = ", ".join(f"policy {p} at env frame {f}" for p, f in sorted(self.reached.items()))
            log.info("Stopping: every learning policy has scored --eval_score_to_win=%s (%s).", score, at)

    def _stat_text(self, result: Any) -> str:
        """`, FRAGCOUNT 3.40 (10 episodes)` for `--eval_stat=FRAGCOUNT`; empty without the flag."""
        name = self.cfg.eval_stat
        if not name:
            return ""
        if result.stat_mean is None:
            return f", {name} not reported by the env"
        return f", {name} {result.stat_mean:.2f} ({len(result.stats)} episodes)"

    def close(self) -> None:
        """Reports results that arrived; closes the inline eval env. Call after the placement's
        close, which stops the evaluator process: every result it sent is then in the queue."""
        if self.player is None:
            self._collect()
        else:
            self.player.close()


def make_train_evaluator(run: Any) -> TrainEvaluator | None:
    """The run's `TrainEvaluator`, or None: evaluation off (`--eval_every_env_frames=0`), no
    learning policy, or a data-parallel rank other than 0 (rank 0 evaluates and writes)."""
    if not run.cfg.eval_every_env_frames or not run.learning or not run.writes:
        return None
    return TrainEvaluator(run)
