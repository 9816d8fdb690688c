"""The evaluator process of the async placement: waits for requests from the main process,
reads the requested policies' current weights from their `SharedWeights` (what inference acts
with), plays `--eval_episodes` on its own eval env (`EpisodePlayer`) and sends each `EvalResult`
back; with `--save_best_by_eval` it writes the best checkpoint itself (`BestByEval`), from the
weights it played.

It is spawned and supervised as a rollout worker is (`AsyncPlacement.spawn_extra` with a
heartbeat: it dies with its parent; one that crashes, exits or shows no sign of life for
`--heartbeat_timeout_sec` is replaced, within `--max_worker_restarts_per_hour`), and runs at
`--default_niceness` + 15 (at most 19; `surge.runtime.process_setup.child_niceness`), above the
rollout workers' + 10 (level with them at 19 where they act themselves), so that where cores are
short the sampler and the learner come first. Its signs of life: each poll of its requests, and
every `STOP_CHECK_STEPS` env steps of an evaluation.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from queue import Empty
from typing import Any

import torch

from surge.evaluation.best_by_eval import BestByEval
from surge.evaluation.episodes import EpisodePlayer
from surge.learning.run_flags import rebuild_cfg
from surge.runtime.components import torch_device
from surge.runtime.experiment_folder import ExperimentFolder, run_log_file
from surge.runtime.process_context import SharedContext
from surge.runtime.process_setup import child_niceness, run_child, setup_child

log = logging.getLogger("surge")


@dataclass
class EvaluatorContext:
    """The evaluator process: requests `(request_id, env_frames, {policy_id: counters})` from
    `request_queue` (the env frames of the request are replaced by the run's when the weights are
    read: `SharedContext.env_frames`), `(request_id, EvalResult or None, best checkpoint path or
    None)` to `result_queue`, one per policy requested; `heartbeat`: `[1]` float64 in shared memory,
    the `time.monotonic()` of its latest sign of life; `resume`: see `BestByEval` (a replacement
    evaluator resumes the best scores its predecessor wrote)."""

    shared: SharedContext
    request_queue: Any
    result_queue: Any
    heartbeat: torch.Tensor
    resume: bool


def evaluator_process_main(ctx: EvaluatorContext) -> None:
    """Entry point of the evaluator process."""
    shared = ctx.shared
    cfg = rebuild_cfg(shared.cfg_values)
    setup_child(
        "evaluator",
        niceness=child_niceness(cfg, "evaluator"),
        torch_threads=cfg.num_torch_threads or 1,
        log_file=run_log_file(cfg),
    )

    def loop() -> None:
        torch.set_grad_enabled(False)
        player = EpisodePlayer(cfg, torch_device(cfg))
        best = None
        if cfg.save_best_by_eval:
            folder = ExperimentFolder(cfg)
            policies = range(cfg.num_policies)
            best = BestByEval(cfg, {p: folder.checkpoints(p) for p in policies}, ctx.resume)
        stopping = shared.stop_flag.is_set
        heartbeat = ctx.heartbeat

        def stop() -> bool:  # asked at each poll and every STOP_CHECK_STEPS env steps: a sign of life
            heartbeat[0] = time.monotonic()
            return stopping()

        played = 0
        try:
            while not stop():
                try:
                    request_id, _, requested = ctx.request_queue.get(timeout=0.1)
                except Empty:
                    continue
                for p, counters in requested.items():
                    version = shared.weights[p].load_into(player.model)
                    # the run's env frames now, when these weights are the latest published (the
                    # request's may be older: this process may have been busy or starting)
                    env_frames = int(shared.env_frames[0])
                    if version is None:  # a learner died or kept publishing for a second
                        log.warning("Evaluator: policy %d's weights could not be read; skipped", p)
                        ctx.result_queue.put((request_id, None, None))  # the run counts it as answered
                        continue
                    result = player.evaluate(p, version, env_frames, stop=stop)
                    if stop():  # a partial evaluation is not reported
                        return
                    path = None
                    if best is not None:
                        path = best.offer(
                            p,
                            {k: v.detach().cpu() for k, v in player.model.state_dict().items()},
                            version,
                            result.return_mean,
                            {**counters, "env_frames": env_frames},
                        )
                    ctx.result_queue.put((request_id, result, str(path) if path is not None else None))
                    played += 1
        finally:
            player.close()
            log.info(
                "Evaluator: %d evaluation(s) played, %.1f s of CPU time in this process",
                played,
                time.process_time(),
            )

    run_child("evaluator", shared.report_queue, loop)
