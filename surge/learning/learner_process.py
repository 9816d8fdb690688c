"""The learner's process in the async placement: collect finished trajectory blocks, train once an
iteration's worth is there, give the blocks back, publish weights, save checkpoints on request.

Commands from the main process (its command queue): ("save", kind, counters) and ("stop",).
Reports to the main process: ("train", stats), ("saved", kind, path), ("learner_ready", version).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from queue import Empty
from typing import Any

import torch

from surge.cfg.cli import rebuild_cfg
from surge.experiment.checkpoint import CheckpointManager
from surge.learning.learner import Learner
from surge.models.actor_critic import make_actor_critic
from surge.runtime.components import seed_everything, traj_per_iteration
from surge.runtime.placement import learner_checkpoint_state, restore_learner
from surge.runtime.process_setup import run_child, setup_child
from surge.runtime.shared_state import BlockPool, SharedWeights

log = logging.getLogger("surge")


def learner_process_main(
    cfg_values: dict[str, Any],
    obs_space: Any,
    action_space: Any,
    buffers: Any,
    block_pool: BlockPool,
    weights: SharedWeights,
    env_frames: torch.Tensor,
    ckpt_folder: str,
    resume: bool,
    learner_queue: Any,
    command_queue: Any,
    report_queue: Any,
) -> None:
    """Entry point of the learner process; it exits after a ("stop",) command."""
    cfg = rebuild_cfg(cfg_values)
    setup_child(
        "learner",
        niceness=cfg.default_niceness,
        torch_threads=cfg.num_torch_threads or torch.get_num_threads(),
    )

    def loop() -> None:
        seed_everything(cfg.seed)
        device = torch.device("cuda" if cfg.device == "gpu" else "cpu")
        model = make_actor_critic(cfg, obs_space, action_space).to(device)
        learner = Learner(cfg, model, buffers, device)
        ckpt = CheckpointManager(ckpt_folder, cfg.keep_checkpoints)
        if resume:
            state = ckpt.load("latest")
            if state is not None:
                restore_learner(model, learner, state)
        weights.publish(model, learner.policy_version)
        report_queue.put(("learner_ready", learner.policy_version))

        def do(item: tuple) -> None:
            """Training and checkpoints touch the model, so they run in order on one thread."""
            if item[0] == "train":
                t0 = time.monotonic()
                stats = learner.train_batch(item[1], env_frames=int(env_frames[0]))
                stats["train_seconds"] = time.monotonic() - t0
                weights.publish(model, learner.policy_version)
                for first_slot in item[2]:  # blocks come back only after training
                    block_pool.release(first_slot)
                report_queue.put(("train", stats))
            elif item[0] == "save":
                _, kind, counters = item
                path = ckpt.save(
                    learner_checkpoint_state(model, learner, counters),
                    learner.policy_version,
                    counters["env_frames"],
                    kind,
                )
                report_queue.put(("saved", kind, str(path)))

        if cfg.train_in_background_thread:
            trainer = TrainerThread(do)
            submit, drop = trainer.submit, trainer.drop_pending
        else:
            trainer, submit, drop = None, do, list
        try:
            _collect(cfg, learner, block_pool, learner_queue, command_queue, submit, drop)
        finally:
            if trainer is not None:
                trainer.finish()

    run_child("learner", report_queue, loop)


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


def _collect(cfg, learner, block_pool, learner_queue, command_queue, submit, drop) -> None:
    """The learner's main loop: gather finished blocks into batches and submit training and
    checkpoint work in arrival order; return on ("stop",).

    A batch's blocks go back to the pool only once it is trained, as Sample Factory's batcher stops
    collection while all `num_batches_to_accumulate` batch slots are taken: the pool
    (`blocks_per_split`) then bounds the batches the learner holds, so collection pauses when the
    learner falls behind instead of queueing stale experience. This keeps the policy lag at 1-2
    iterations when the learner is the bottleneck (4-5 when blocks were freed on copy, doom_basic).
    With `num_minibatches_to_accumulate=0` the pool holds one batch: synchronous PPO."""
    block = block_pool.block_size
    blocks_per_batch = -(-traj_per_iteration(cfg) // block)  # one iteration's worth, rounded up to blocks
    pending: list[int] = []
    while True:
        try:
            for cmd in command_queue.get_many(block=False):
                if cmd[0] == "stop":
                    return
                if cmd[0] == "save" and cmd[1] == "final":  # stopping: skip batches not yet started
                    dropped = [item for item in drop() if item[0] == "train"]
                    for item in dropped:
                        for first_slot in item[2]:
                            block_pool.release(first_slot)
                    if dropped:
                        log.info("Learner: %d queued batch(es) not trained at the stop", len(dropped))
                    cmd = ("save", "checkpoint", cmd[2])
                submit(cmd)
        except Empty:
            pass
        try:
            pending.extend(learner_queue.get_many(timeout=0.05))
        except Empty:
            continue
        if cfg.sampler_only:
            for f in pending:
                block_pool.release(f)
            pending.clear()
            continue
        while len(pending) >= blocks_per_batch:
            take, pending = pending[:blocks_per_batch], pending[blocks_per_batch:]
            batch = learner.prepare_batch(torch.cat([torch.arange(f, f + block) for f in take]))
            submit(("train", batch, take))
