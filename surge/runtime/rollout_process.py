"""A rollout worker's process in the async placement: step splits whose actions are ready, ask the
acting policies' inference for the next ones, hand finished trajectories to their learners.

A request's tag packs the worker's incarnation (the processes started for this worker index: a
replacement ignores replies meant for the process it replaced, which may still be on its queue),
the split's request sequence number and the split. With several policies a split waits for one
`ActionsReady` per policy acting in it. When the main process replaced an inference worker, the
requests it had not answered are sent again; a reply that is not awaited (stale sequence number,
or a second answer to a request sent twice) is ignored.

The worker writes its heartbeat (`SharedContext.heartbeats`) every loop iteration, at least every
0.1 s while it waits, so the main process can tell a hung worker from a waiting one.
"""

from __future__ import annotations

import contextlib
import random
import time
from queue import Empty
from typing import Any

import torch

from surge.data.routing import OwnSlots
from surge.learning.amp import casts_kept
from surge.runtime.commands import SetRewardShaping
from surge.runtime.components import make_rollout_worker, seed_everything
from surge.runtime.experiment_folder import run_log_file
from surge.runtime.messages import (
    BlockReady,
    EnvFaults,
    Episodes,
    NonFiniteEnvOutput,
    ResetDone,
    wire_slots,
)
from surge.runtime.process_context import RolloutContext
from surge.runtime.process_setup import child_niceness, run_child, setup_child
from surge.runtime.rollout_inference import acting_in_worker
from surge.sampling.inference_loop import InProcessActing
from surge.sampling.rollout_loop import RolloutLoop
from surge.sampling.rollout_worker import RolloutWorker

REPORT_INTERVAL_SEC = 0.5  # episodes and non-finite counts; env steps are counted in shared memory
INBOX_POLL_SEC = 0.01  # acting in this process: how often the inbox is looked at while stepping
SEQ = 1 << 16  # request sequence numbers per split wrap here (a stale reply is a few requests old)


def rollout_process_main(ctx: RolloutContext) -> None:
    """Entry point of a rollout worker process."""
    shared, w = ctx.shared, ctx.worker_idx
    layout = shared.layout()
    cfg = layout.cfg
    setup_child(
        f"rollout_{w}",
        niceness=child_niceness(cfg, "rollout"),
        cpu=w if cfg.set_workers_cpu_affinity else None,
        torch_threads=1,
        single_thread_envs=cfg.force_envs_single_thread,
        log_file=run_log_file(cfg),
    )

    def loop() -> None:
        if cfg.deterministic:  # the worker's own stream (the decorrelation's random steps)
            assert cfg.seed is not None
            seed_everything(cfg.seed + 1_000_003 * (1 + w) + 7)
        worker = make_rollout_worker(layout, w)
        try:
            _drain(ctx.worker_queue)
            worker.reset()
            for p, scheme in ctx.reward_shaping.items():  # sent before this process started
                worker.set_policy_reward_shaping(p, scheme)
            shared.report_queue.put(ResetDone(w, ctx.incarnation))
            beats = shared.heartbeats.numpy()
            beats[w] = time.monotonic()
            # Sample Factory's benchmark mode skips the pause (actor_worker.py)
            if cfg.decorrelate_experience_max_seconds > 0 and not cfg.benchmark:
                until = time.monotonic() + random.uniform(0, cfg.decorrelate_experience_max_seconds)
                while not shared.stop_flag.wait(max(0.0, min(1.0, until - time.monotonic()))):
                    beats[w] = time.monotonic()
                    if time.monotonic() >= until:
                        break
            # acting in this process or through inference processes: a choice of placement
            acting = acting_in_worker(shared, layout, worker) if cfg.policy_workers_per_policy == 0 else None
            _run(ctx, worker, acting)
        finally:
            worker.close()

    run_child(f"rollout worker {w}", shared.report_queue, loop)


class _Requester:
    """Sends a split's `PolicyRequest` to the inference worker of each policy acting in it, tracks
    which policies' answers the split still awaits, and sends the unanswered requests again to an
    inference worker that was replaced (see the module docstring)."""

    def __init__(self, ctx: RolloutContext, worker: RolloutWorker):
        self.ctx, self.worker = ctx, worker
        self.splits = len(worker.splits)
        self.pending = [0] * self.splits  # per split, a bit per policy whose answer it awaits
        self.seq = [0] * self.splits
        self.sent: list[tuple | None] = [None] * self.splits  # each split's latest request
        w = ctx.worker_idx
        # this worker's inference worker per policy (workers spread over a policy's inference workers)
        self.inference = [w % len(qs) for qs in ctx.request_queues]
        self.queues = [qs[i] for qs, i in zip(ctx.request_queues, self.inference, strict=True)]
        shared = ctx.shared
        self.generation = shared.inference_generation.numpy()
        self.restarts = shared.inference_restarts.numpy()
        self.seen_restarts = int(self.restarts[0])
        self.seen_generation = self.generation.copy()

    def request(self, s: int) -> None:
        slots, t = self.worker.policy_request(s)
        self.seq[s] = seq = (self.seq[s] + 1) % SEQ
        tag = ((self.ctx.incarnation * SEQ) + seq) * self.splits + s
        # a `PolicyRequest`, plain on the wire (its fields in order, built without the class)
        raw = (self.ctx.worker_idx, tag, *wire_slots(self.worker.splits[s].index), t)
        policies = self.worker.request_policies(s)
        pending = 0
        for p in policies:
            pending |= 1 << p
            self.queues[p].put(raw)
        self.pending[s] = pending
        self.sent[s] = raw

    def answered(self, raw: tuple) -> int | None:
        """The split whose actions are all written after this reply (a plain `ActionsReady`), else
        None (also for a reply not awaited: to the process this one replaced, stale, or a second
        answer)."""
        tag, p = raw
        s = tag % self.splits
        rest = tag // self.splits
        if rest // SEQ != self.ctx.incarnation or rest % SEQ != self.seq[s]:
            return None
        pending, bit = self.pending[s], 1 << p
        if not pending & bit:
            return None
        self.pending[s] = pending = pending ^ bit
        return None if pending else s

    def resend_if_replaced(self) -> None:
        """Sends the unanswered requests again to each of this worker's inference workers that the
        main process replaced since the last call (one integer comparison when none was)."""
        if int(self.restarts[0]) == self.seen_restarts:
            return
        self.seen_restarts = int(self.restarts[0])
        shared = self.ctx.shared
        for p, i in enumerate(self.inference):
            k = shared.inference_index(p, i)
            if self.generation[k] == self.seen_generation[k]:
                continue
            self.seen_generation[k] = self.generation[k]
            for s in range(self.splits):
                if self.pending[s] >> p & 1 and self.sent[s] is not None:
                    self.queues[p].put(self.sent[s])


def _run(ctx: RolloutContext, worker: RolloutWorker, acting: InProcessActing | None = None) -> None:
    """Drives the worker's `RolloutLoop` until stopped, acting through requests to the inference
    processes or, with `acting` (`--policy_workers_per_policy=0`), in this process. A split whose
    next rollout has no free block waits on its own (back-pressure from the learners) while the
    other splits go on: blocking the whole worker would keep the other split's finished block from
    a learner, which may be waiting for it.

    After every step the loop adds the worker's env steps to `shared.env_steps[worker_idx]`; once
    the workers' total reaches `shared.env_steps_budget` it steps no more (the run is over: the main
    process stops it), so a run overshoots its budget by at most one step of each split."""
    counts = ctx.shared.env_steps.numpy()  # shared memory: [num_workers] int64
    learner_queues = ctx.learner_queues

    def deliver(p: int, first: int, own: OwnSlots) -> None:
        learner_queues[p].put(BlockReady(first, own))  # `BLOCK_CODEC` packs it

    loop = RolloutLoop([worker], deliver, counts, ctx.worker_idx)
    requester = None
    if acting is None:
        requester = _Requester(ctx, worker)
        for s in range(len(worker.splits)):
            requester.request(s)
    else:
        torch.set_grad_enabled(False)  # this process only acts and steps envs
    # acting here under mixed precision: the weights' casts are kept between forward passes until
    # new weights are loaded (`InferenceLoop.reload`); this process never trains them
    with casts_kept(torch.device("cpu")) if acting is not None else contextlib.nullcontext():
        _steps(ctx, worker, loop, requester, acting)


def _steps(
    ctx: RolloutContext,
    worker: RolloutWorker,
    loop: RolloutLoop,
    requester: _Requester | None,
    acting: InProcessActing | None,
) -> None:
    """`_run`'s loop: steps until the stop flag is set, or only reports once the budget is reached."""
    shared = ctx.shared
    stop_flag = shared.stop_flag
    counts = shared.env_steps.numpy()  # shared memory: [num_workers] int64
    budget = shared.env_steps_budget.numpy()
    w_idx = ctx.worker_idx
    beats = shared.heartbeats.numpy()
    last_report = last_poll = time.monotonic()
    while not stop_flag.is_set():
        now = beats[w_idx] = time.monotonic()
        if requester is not None:
            requester.resend_if_replaced()
        # (a Python sum: numpy's costs a microsecond or two of dispatch on this tiny array)
        if sum(counts.tolist()) >= budget.item(0):  # reached: only report until the main process stops us
            stop_flag.wait(0.05)
            last_report = _report(ctx, worker, last_report)
            continue
        if requester is not None:
            _on_replies(ctx, loop, requester)
        else:
            assert acting is not None
            last_poll = _act_here(ctx, loop, acting, now, last_poll)
        last_report = _report(ctx, worker, last_report)


def _on_replies(ctx: RolloutContext, loop: RolloutLoop, requester: _Requester) -> None:
    """Acting through inference processes: requests the splits that got a block, then advances
    each split whose actions all arrived and requests its next step."""
    worker = loop.workers[0]
    if loop.waiting:
        for _, waited in loop.resume_waiting():
            requester.request(waited)
    try:
        ready = ctx.worker_queue.get_many(timeout=0.001 if loop.waiting else 0.1)
    except Empty:
        return
    for raw in ready:
        if type(raw) is SetRewardShaping:  # the only message that is not a plain tuple
            worker.set_policy_reward_shaping(raw.policy_id, raw.scheme)
            continue
        s = requester.answered(raw)  # a plain ActionsReady tuple
        if s is None:
            continue
        if not loop.advance(0, s):
            loop.waiting.add((0, s))
            continue
        requester.request(s)


def _act_here(
    ctx: RolloutContext, loop: RolloutLoop, acting: InProcessActing, now: float, last_poll: float
) -> float:
    """Acting in this process: the splits whose next rollout has a block are acted on together (one
    forward pass per policy), then stepped in turn, with no messages; the inbox only carries the
    main process's `SetRewardShaping`, looked at every `INBOX_POLL_SEC`. Returns the time of the
    last look."""
    if loop.waiting:
        loop.resume_waiting()
    idle = len(loop.waiting) == len(loop.splits)
    if idle or now - last_poll >= INBOX_POLL_SEC:
        last_poll = now
        try:  # sleeps a little only when every split waits for a free block
            msgs = ctx.worker_queue.get_many(timeout=0.001 if idle else 0.0, block=idle)
        except Empty:
            msgs = []
        worker = loop.workers[0]
        for msg in msgs:
            if type(msg) is SetRewardShaping:
                worker.set_policy_reward_shaping(msg.policy_id, msg.scheme)
    if not idle:
        loop.step_ready(acting)
    return last_poll


def _report(ctx: RolloutContext, worker: RolloutWorker, last_report: float) -> float:
    """Sends the finished episodes and non-finite env outputs (if any) every
    `REPORT_INTERVAL_SEC`; returns the time of the last report."""
    now = time.monotonic()
    if now - last_report < REPORT_INTERVAL_SEC:
        return last_report
    episodes = [(e.episode_return, e.episode_length, e.policy_id, e.extra) for e in worker.pop_episodes()]
    if episodes:
        ctx.shared.report_queue.put(Episodes(ctx.worker_idx, episodes))
    rewards, obs = worker.pop_nonfinite()
    if rewards or obs:
        ctx.shared.report_queue.put(NonFiniteEnvOutput(ctx.worker_idx, rewards, obs))
    faults, last = worker.pop_env_faults()
    if faults:
        ctx.shared.report_queue.put(EnvFaults(ctx.worker_idx, faults, last))
    return now


def _drain(queue: Any) -> None:
    try:
        while True:
            queue.get_many(block=False)
    except Empty:
        pass
