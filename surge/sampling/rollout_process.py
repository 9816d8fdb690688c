"""The rollout worker's process in the async placement: step splits whose actions are ready,
ask inference for the next ones, hand finished trajectories to the learner.

Messages (all small tuples of ints):
- to inference: `(worker_idx, tag, first_slot, num_slots, t)`, tag = incarnation x splits + split_idx;
- from inference, on this worker's queue: the request's `tag` (its actions are written);
- to the learner: `first_slot` of a finished block of trajectories;
- to the main process: ("reset_done", worker_idx, incarnation),
  ("steps", worker_idx, env_steps, [(return, length)]).

`incarnation` counts the processes started for this worker index: a replacement (after a stuck or
crashed first reset) ignores replies meant for the process it replaced, which may still be on its
queue or in an inference worker's batch.
"""

from __future__ import annotations

import random
import time
from queue import Empty
from typing import Any

from surge.cfg.cli import rebuild_cfg
from surge.envs.registry import make_env
from surge.runtime.process_setup import run_child, setup_child
from surge.runtime.shared_state import BlockPool
from surge.sampling.rollout_worker import RolloutWorker

REPORT_INTERVAL_SEC = 0.5


def rollout_process_main(
    cfg_values: dict[str, Any],
    worker_idx: int,
    buffers: Any,
    block_pool: BlockPool,
    request_queue: Any,
    worker_queue: Any,
    learner_queue: Any,
    report_queue: Any,
    stop_event: Any,
    incarnation: int = 0,
) -> None:
    """Entry point of a rollout worker process (`incarnation`: see the module docstring)."""
    cfg = rebuild_cfg(cfg_values)
    setup_child(
        f"rollout_{worker_idx}",
        niceness=cfg.default_niceness,
        cpu=worker_idx if cfg.set_workers_cpu_affinity else None,
        torch_threads=1,
        single_thread_envs=cfg.force_envs_single_thread,
    )

    def loop() -> None:
        splits = cfg.worker_num_splits
        per_split = cfg.num_envs_per_worker // splits
        env_splits = [[make_env(cfg) for _ in range(per_split)] for _ in range(splits)]
        pools = [block_pool.owner_view(worker_idx * splits + s) for s in range(splits)]
        worker = RolloutWorker(cfg, worker_idx, env_splits, buffers, pools)
        try:
            _drain(worker_queue)
            worker.reset()
            report_queue.put(("reset_done", worker_idx, incarnation))
            if cfg.decorrelate_experience_max_seconds > 0:
                _sleep_unless_stopped(random.uniform(0, cfg.decorrelate_experience_max_seconds), stop_event)
            for s in range(splits):
                _request(request_queue, worker_idx, s, worker, incarnation)
            _run(
                worker,
                worker_idx,
                incarnation,
                request_queue,
                worker_queue,
                learner_queue,
                report_queue,
                stop_event,
            )
        finally:
            worker.close()

    run_child(f"rollout worker {worker_idx}", report_queue, loop)


def _request(
    request_queue: Any, worker_idx: int, split_idx: int, worker: RolloutWorker, incarnation: int
) -> None:
    slots, t = worker.policy_request(split_idx)
    tag = incarnation * len(worker.splits) + split_idx
    request_queue.put((worker_idx, tag, int(slots[0]), len(slots), t))


def _run(
    worker, worker_idx, incarnation, request_queue, worker_queue, learner_queue, report_queue, stop_event
) -> None:
    """Steps ready splits until stopped. A split whose next rollout has no free block waits on its
    own (back-pressure from the learner) while the other splits go on: blocking the whole worker
    would keep the other split's finished block from the learner, which may be waiting for it."""
    last_report = time.monotonic()
    waiting: list[int] = []
    splits = len(worker.splits)
    while not stop_event.is_set():
        for s in list(waiting):
            if worker.start_next_rollout(s):
                waiting.remove(s)
                _request(request_queue, worker_idx, s, worker, incarnation)
        try:
            ready = worker_queue.get_many(timeout=0.001 if waiting else 0.1)
        except Empty:
            ready = []
        for tag in ready:
            if tag // splits != incarnation:  # a reply to the process this one replaced
                continue
            s = tag % splits
            finished = worker.advance(s)
            if finished is not None:
                learner_queue.put(int(finished[0]))
                if not worker.start_next_rollout(s):
                    waiting.append(s)
                    continue
            _request(request_queue, worker_idx, s, worker, incarnation)
        now = time.monotonic()
        if now - last_report >= REPORT_INTERVAL_SEC:
            last_report = now
            episodes = [(e.episode_return, e.episode_length) for e in worker.pop_episodes()]
            report_queue.put(("steps", worker_idx, worker.pop_env_steps(), episodes))


def _drain(queue: Any) -> None:
    try:
        while True:
            queue.get_many(block=False)
    except Empty:
        pass


def _sleep_unless_stopped(seconds: float, stop_event: Any) -> None:
    stop_event.wait(seconds)
