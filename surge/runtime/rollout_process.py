"""A rollout worker's process in the async placement: step splits whose actions are ready, ask the
acting policies' inference for the next ones, hand finished trajectories to their learners.

`tag` = incarnation x splits + split index: `incarnation` counts the processes started for this
worker index, so a replacement (after a stuck or crashed first reset) ignores replies meant for the
process it replaced, which may still be on its queue or in an inference worker's batch. With
several policies a split waits for one `ActionsReady` per policy acting in it.
"""

from __future__ import annotations

import random
import time
from queue import Empty
from typing import Any

from surge.runtime.components import make_rollout_worker
from surge.runtime.messages import (
    ActionsReady,
    BlockReady,
    Episodes,
    NonFiniteEnvOutput,
    PolicyRequest,
    ResetDone,
)
from surge.runtime.process_context import RolloutContext
from surge.runtime.process_setup import run_child, setup_child
from surge.sampling.rollout_worker import RolloutWorker

REPORT_INTERVAL_SEC = 0.5  # episodes and non-finite counts; env steps are counted in shared memory


def rollout_process_main(ctx: RolloutContext) -> None:
    """Entry point of a rollout worker process."""
    shared, w = ctx.shared, ctx.worker_idx
    layout = shared.layout()
    cfg = layout.cfg
    setup_child(
        f"rollout_{w}",
        niceness=cfg.default_niceness,
        cpu=w if cfg.set_workers_cpu_affinity else None,
        torch_threads=1,
        single_thread_envs=cfg.force_envs_single_thread,
    )

    def loop() -> None:
        worker = make_rollout_worker(layout, w)
        try:
            _drain(ctx.worker_queue)
            worker.reset()
            shared.report_queue.put(ResetDone(w, ctx.incarnation))
            if cfg.decorrelate_experience_max_seconds > 0:
                shared.stop_event.wait(random.uniform(0, cfg.decorrelate_experience_max_seconds))
            _run(ctx, worker)
        finally:
            worker.close()

    run_child(f"rollout worker {w}", shared.report_queue, loop)


class _Requester:
    """Sends a split's `PolicyRequest` to the inference worker of each policy acting in it and
    counts the replies it still waits for."""

    def __init__(self, ctx: RolloutContext, worker: RolloutWorker):
        self.ctx, self.worker = ctx, worker
        self.splits = len(worker.splits)
        self.waiting_for = [0] * self.splits
        w = ctx.worker_idx
        # this worker's inference queue per policy (workers spread over a policy's inference workers)
        self.queues = [qs[w % len(qs)] for qs in ctx.request_queues]

    def request(self, s: int) -> None:
        slots, t = self.worker.policy_request(s)
        msg = PolicyRequest(
            self.ctx.worker_idx, self.ctx.incarnation * self.splits + s, int(slots[0]), len(slots), t
        )
        policies = self.worker.request_policies(s)
        self.waiting_for[s] = len(policies)
        raw = tuple(msg)  # plain on the wire (surge.runtime.messages)
        for p in policies:
            self.queues[p].put(raw)

    def answered(self, tag: int) -> int | None:
        """The split whose actions are all written after this reply, else None (also for a reply to
        the process this one replaced)."""
        if tag // self.splits != self.ctx.incarnation:
            return None
        s = tag % self.splits
        self.waiting_for[s] -= 1
        return s if self.waiting_for[s] == 0 else None


def _run(ctx: RolloutContext, worker: RolloutWorker) -> None:
    """Steps ready splits until stopped. A split whose next rollout has no free block waits on its
    own (back-pressure from the learners) while the other splits go on: blocking the whole worker
    would keep the other split's finished block from a learner, which may be waiting for it.

    After every step the worker adds its env steps to `shared.env_steps[worker_idx]`; once the
    workers' total reaches `shared.env_steps_budget` it steps no more (the run is over: the main
    process stops it), so a run overshoots its budget by at most one step of each split."""
    shared = ctx.shared
    stop_event = shared.stop_event
    counts = shared.env_steps.numpy()  # shared memory: [num_workers] int64
    budget = shared.env_steps_budget.numpy()
    w_idx = ctx.worker_idx
    requester = _Requester(ctx, worker)
    for s in range(len(worker.splits)):
        requester.request(s)
    last_report = time.monotonic()
    waiting: list[int] = []
    while not stop_event.is_set():
        if counts.sum() >= budget[0]:  # budget reached: only report until the main process stops us
            stop_event.wait(0.05)
            last_report = _report(ctx, worker, last_report)
            continue
        for s in list(waiting):
            if worker.start_next_rollout(s):
                waiting.remove(s)
                requester.request(s)
        try:
            ready = ctx.worker_queue.get_many(timeout=0.001 if waiting else 0.1)
        except Empty:
            ready = []
        for raw in ready:
            answered = requester.answered(ActionsReady._make(raw).tag)
            if answered is None:
                continue
            s = answered
            finished = worker.advance(s)
            counts[w_idx] += worker.pop_env_steps()
            if finished is not None:
                block = tuple(BlockReady(int(finished[0])))
                for p in worker.hand_over(s, finished):
                    ctx.learner_queues[p].put(block)
                if not worker.start_next_rollout(s):
                    waiting.append(s)
                    continue
            requester.request(s)
        last_report = _report(ctx, worker, last_report)


def _report(ctx: RolloutContext, worker: RolloutWorker, last_report: float) -> float:
    """Sends the finished episodes and non-finite env outputs (if any) every
    `REPORT_INTERVAL_SEC`; returns the time of the last report."""
    now = time.monotonic()
    if now - last_report < REPORT_INTERVAL_SEC:
        return last_report
    episodes = [(e.episode_return, e.episode_length, e.policy_id) for e in worker.pop_episodes()]
    if episodes:
        ctx.shared.report_queue.put(Episodes(ctx.worker_idx, episodes))
    rewards, obs = worker.pop_nonfinite()
    if rewards or obs:
        ctx.shared.report_queue.put(NonFiniteEnvOutput(ctx.worker_idx, rewards, obs))
    return now


def _drain(queue: Any) -> None:
    try:
        while True:
            queue.get_many(block=False)
    except Empty:
        pass
