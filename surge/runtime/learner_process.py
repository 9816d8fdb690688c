"""A learner's process in the async placement (one per policy): collect its policy's finished
trajectories, train once the batcher has a batch, give the trajectories back, publish weights,
save checkpoints on request.

Commands from the main process (its command queue): `SaveCommand(kind, counters)`, `StopCommand()`,
`SetHyperparams`, `ExportPolicy`, `ImportPolicy` (the population commands, run in order with the
batches on the thread that trains).
Reports to the main process: `TrainStats` (of one batch per second, `surge.runtime.stats_cadence`),
`Saved`, `LearnerReady`, `PolicyExported`, `PolicyImported` (`surge.runtime.messages`).
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any

import torch

from surge.cfg.config import minibatches_to_accumulate
from surge.data.trajectory_batch import TrajectoryBatch
from surge.learning.algorithm import Feed
from surge.learning.base import LearnerBase
from surge.learning.batcher import Batcher
from surge.runtime.checkpoint import CheckpointManager, atomic_torch_save
from surge.runtime.commands import SetHyperparams
from surge.runtime.components import (
    configure_backends,
    make_learner,
    make_model,
    seed_everything,
    torch_device,
)
from surge.runtime.data_parallel import join_data_parallel, leave_data_parallel
from surge.runtime.experiment_folder import run_log_file
from surge.runtime.learner_commands import run_commands
from surge.runtime.learner_loop import LearnerLoop
from surge.runtime.lockstep_learner import collect_lockstep
from surge.runtime.messages import (
    BlockReady,
    DataParallelStopped,
    ExportPolicy,
    ImportPolicy,
    LearnerReady,
    PolicyExported,
    PolicyImported,
    SaveCommand,
    Saved,
    SaveRefused,
    TrainStats,
)
from surge.runtime.placement import checkpoint_state, restore_policy
from surge.runtime.process_context import LearnerContext
from surge.runtime.process_setup import child_niceness, run_child, setup_child
from surge.runtime.stats_cadence import StatsCadence

log = logging.getLogger("surge")


def learner_process_main(ctx: LearnerContext) -> None:
    """Entry point of a learner process; it exits after a `StopCommand`."""
    shared, p = ctx.shared, ctx.policy_id
    layout = shared.layout()
    cfg = layout.cfg
    setup_child(
        f"learner_p{p}",
        niceness=child_niceness(cfg, "learner"),
        torch_threads=cfg.num_torch_threads or torch.get_num_threads(),
        log_file=run_log_file(cfg),
    )

    def loop() -> None:
        seed_everything(None if cfg.seed is None else cfg.seed + p)
        device = torch_device(cfg)
        configure_backends(cfg, device)
        parts = make_model(cfg, layout.info, device)
        model = parts.acting
        learner = make_learner(layout, parts, device, p)
        ckpt = CheckpointManager(Path(ctx.ckpt_folder), cfg.keep_checkpoints, p)
        if ctx.resume:
            state = ckpt.load("latest")
            if state is not None:
                restore_policy(model, learner, state, f"{ckpt.name}'s checkpoint")
        beats = shared.learner_heartbeats.numpy()
        in_item = [False]  # a batch or checkpoint is in progress: only it may beat

        def progress() -> bool:
            """Called between optimizer steps: a sign of life; True when the run is stopping (the
            learner leaves the batch)."""
            beats[p] = time.monotonic()
            return shared.stop_flag.is_set()

        learner.should_stop = progress
        lockstep = cfg.deterministic  # the fixed schedule (surge.runtime.lockstep_learner)
        if lockstep:  # a batch is never left in the middle: the budget fixes what is trained
            learner.should_stop = lambda: progress() and False
        # a data-parallel run (torchrun): this process joins the process group and takes rank 0's
        # state; a batch is never left in the middle (the other ranks take the same steps)
        dp = join_data_parallel(model, learner, device)
        if dp is not None:
            learner.should_stop = lambda: progress() and False
            dp.on_wait = lambda: beats.__setitem__(p, time.monotonic())  # waiting for a rank's batch
        weights = shared.weights[p]
        weights.publish(model, learner.policy_version)
        loop = LearnerLoop(model, learner, p)  # no rollback: an async run does not resume exactly
        log.info(
            "Learner %d (pid %d) on %s, %d torch thread(s), starts at policy version %d",
            p, os.getpid(), device, torch.get_num_threads(), learner.policy_version,
        )  # fmt: skip
        shared.report_queue.put(LearnerReady(p, learner.policy_version))
        pool = layout.block_pool
        # collection waits for training (A2C, synchronous PPO): the weights are published before
        # the trained slots are released, else a rollout could start on the previous weights
        synchronous = minibatches_to_accumulate(cfg) == 0
        cadence = StatsCadence()  # statistics of a batch per second, not of every batch

        def do(item: TrainerItem) -> None:
            """Training and checkpoints touch the model, so they run in order on one thread. Its
            start, optimizer steps and end are the learner's heartbeats meanwhile (the main process
            kills a learner silent for --heartbeat_timeout_sec)."""
            in_item[0] = True
            beats[p] = time.monotonic()
            try:
                run_item(item)
            finally:
                beats[p] = time.monotonic()
                in_item[0] = False

        def run_item(item: TrainerItem) -> None:
            if isinstance(item, SetHyperparams):
                changed = loop.set_hyperparams(item.values)
                log.info("Learner %d: hyper-parameters set: %s", p, _changes(changed))
                return
            if isinstance(item, ExportPolicy):
                atomic_torch_save(loop.export(), Path(item.path))
                shared.report_queue.put(PolicyExported(p, item.path))
                return
            if isinstance(item, ImportPolicy):
                state = torch.load(item.path, map_location=device, weights_only=True)
                # one import per export: kept, they would pile up over a long PBT run
                Path(item.path).unlink(missing_ok=True)
                loop.replace(state)
                weights.publish(model, learner.policy_version)
                log.info(
                    "Learner %d: replaced by policy %d's weights, optimizer and hyper-parameters "
                    "(policy version %d)", p, item.source_policy_id, learner.policy_version,
                )  # fmt: skip
                shared.report_queue.put(PolicyImported(p, item.source_policy_id, learner.policy_version))
                return
            if isinstance(item, SaveCommand):
                frames = int(item.counters["env_frames"])
                path = ckpt.save(
                    checkpoint_state(model, learner, item.counters),
                    learner.policy_version,
                    frames,
                    "checkpoint" if item.kind == "final" else item.kind,
                )
                if path is None:  # non-finite weights: the previous checkpoint stays the latest
                    shared.report_queue.put(SaveRefused(p, item.kind, ckpt.last_refusal, frames))
                else:
                    shared.report_queue.put(Saved(p, item.kind, str(path)))
                return
            batch, slots = item.batch, item.slots
            replay = type(item) is ReplayBlock
            t0 = time.monotonic()
            learner.diagnostics = with_diagnostics = cadence.due()
            env_frames = int(shared.env_frames[0]) if item.env_frames is None else item.env_frames
            if replay:  # replay: copied out, released at once, trained at the replay ratio
                maybe_stats = loop.observe(batch, functools.partial(pool.release, slots, p), env_frames)
                if maybe_stats is None:
                    return
                stats = maybe_stats
            else:
                local_frames = env_frames
                # the ranks' round: all train this batch, or all stop
                round_frames = loop.begin_round(dp, local_frames, env_frames, model)
                if round_frames is None:
                    pool.release(slots, p)
                    shared.report_queue.put(DataParallelStopped(p))
                    return
                stats = loop.train(batch, round_frames)
                if dp is not None:  # the round's env frames: all ranks' and this one's
                    stats.update(global_env_frames=float(round_frames), local_env_frames=float(local_frames))
                if synchronous:  # the rollouts these slots start act with the new weights: lag 0
                    weights.publish(model, learner.policy_version)
                pool.release(slots, p)  # on-policy: trajectories come back only after training
            stats["train_seconds"] = time.monotonic() - t0
            loop.finish_stats(stats)
            if (replay or not synchronous) and not lockstep:  # lockstep: its loop publishes
                weights.publish(model, learner.policy_version)
            sent = cadence.report(stats, with_diagnostics)
            if sent is not None:
                shared.report_queue.put(TrainStats(p, sent))

        def idle_beat() -> None:
            if not in_item[0]:
                beats[p] = time.monotonic()

        trainer = TrainerThread(do) if cfg.train_in_background_thread and not lockstep else None
        submit: Callable[[Any], None] = trainer.submit if trainer is not None else do
        drop: Callable[[], list[Any]] = trainer.drop_pending if trainer is not None else list
        try:
            replay = layout.algo.feed is Feed.REPLAY
            batcher = layout.make_batcher()
            if lockstep:
                collect_lockstep(
                    ctx,
                    learner,
                    model,
                    batcher,
                    lambda slots, frames: do(OnPolicyBatch(learner.prepare_batch(slots), slots, frames)),
                    do,
                    idle_beat,
                )
            else:
                _collect(
                    ctx, learner, batcher, ReplayBlock if replay else OnPolicyBatch, submit, drop, idle_beat
                )
        finally:
            if trainer is not None:
                trainer.finish()
        if dp is not None:  # after a clean stop only: a crash leaves the other ranks to torchrun
            leave_data_parallel(dp, int(shared.env_frames[0]), model)

    run_child(f"learner {p}", shared.report_queue, loop)


@dataclass(frozen=True)
class OnPolicyBatch:
    """A batch for the training thread: `LearnerBase.prepare_batch`'s `batch` of the trajectories
    `slots` `[N]` int64, trained once, its slots given back afterwards."""

    batch: TrajectoryBatch
    slots: torch.Tensor
    env_frames: int | None = None  # the schedules' env frames; None: the run's (shared) count


@dataclass(frozen=True)
class ReplayBlock:
    """A replay learner's block for the training thread (`OnPolicyBatch`'s fields): observed into
    the replay buffer, its slots given back at once, then the updates due are run."""

    batch: TrajectoryBatch
    slots: torch.Tensor
    env_frames: int | None = None


#: commands the learner runs in order with its batches (see the module docstring)
POPULATION_ITEMS = (SetHyperparams, ExportPolicy, ImportPolicy)
#: what the training thread runs, in order: batches and the commands that touch the model
TrainerItem = OnPolicyBatch | ReplayBlock | SaveCommand | SetHyperparams | ExportPolicy | ImportPolicy


def _changes(changed: dict[str, tuple[float, float]]) -> str:
    return ", ".join(f"{k} {old:.6g} -> {new:.6g}" for k, (old, new) in changed.items()) or "no change"


class TrainerThread:
    """Runs `do(item)` for submitted items in order on a background thread, one item ahead at most:
    while it trains on a batch, the process's main thread prepares the next one. An exception in
    the thread is re-raised on the main thread at the next `submit` or `finish`."""

    def __init__(self, do: Any):
        self.do = do
        self.items: queue.Queue = queue.Queue(maxsize=1)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="trainer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.items.get()
            if item is None:
                return
            try:
                self.do(item)
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                self.error = e
                return

    def _check(self) -> None:
        if self.error is not None:
            raise self.error

    def submit(self, item: tuple) -> None:
        while True:
            self._check()
            try:
                self.items.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def drop_pending(self) -> list[tuple]:
        """Discards and returns the submitted items not yet started (at the final checkpoint)."""
        dropped = []
        while True:
            try:
                dropped.append(self.items.get_nowait())
            except queue.Empty:
                return dropped

    def finish(self) -> None:
        """Waits until every submitted item is done, then stops the thread."""
        if self.thread.is_alive():
            self.submit(None)  # type: ignore[arg-type]
            self.thread.join()
        self._check()


def _collect(
    ctx: LearnerContext,
    learner: LearnerBase,
    batcher: Batcher,
    item_type: type[OnPolicyBatch] | type[ReplayBlock],
    submit: Callable[[Any], None],
    drop: Callable[[], list[Any]],
    beat: Callable[[], None],
) -> None:
    """The learner's main loop: gather finished trajectories into batches and submit training and
    checkpoint work in arrival order; return on `StopCommand`. `beat()` on every iteration (at
    least every 0.05 s while it waits) writes the learner's heartbeat unless a batch or checkpoint
    is in progress.

    A batch's trajectories go back to the pool only once it is trained, as Sample Factory's batcher stops
    collection while all `num_batches_to_accumulate` batch slots are taken: the pool
    (`blocks_per_split`) then bounds the batches the learner holds, so collection pauses when the
    learner falls behind instead of queueing stale experience. This keeps the policy lag at 1-2
    iterations when the learner is the bottleneck (4-5 when blocks were freed on copy, doom_basic).
    With `num_minibatches_to_accumulate=0` the pool holds one batch: synchronous PPO."""
    pool, p = ctx.shared.block_pool, ctx.policy_id

    def skip_pending() -> None:
        """Stopping: batches not yet started are skipped, their blocks freed; a population
        command still acts, before the final save."""
        pending = drop()
        dropped = [item for item in pending if isinstance(item, (OnPolicyBatch, ReplayBlock))]
        for batch in dropped:
            pool.release(batch.slots, p)
        if dropped:
            log.info("Learner %d: %d queued batch(es) not trained at the stop", p, len(dropped))
        for item in pending:
            if isinstance(item, POPULATION_ITEMS):
                submit(item)

    while True:
        beat()
        # a "final" save is written as a regular checkpoint, reported as final
        if run_commands(ctx.command_queue, submit, before_final=skip_pending):
            return
        try:
            msg: BlockReady
            for msg in ctx.learner_queue.get_many(timeout=0.05):  # decoded by `BLOCK_CODEC`
                batcher.add(msg.first_slot, msg.slots)
        except Empty:
            continue
        while not ctx.shared.stop_flag.is_set() and (taken := batcher.take()) is not None:
            slots = torch.tensor(taken, dtype=torch.int64)
            submit(item_type(learner.prepare_batch(slots), slots))
