"""A learner process's main loop under `--deterministic=True` (`surge.runtime.lockstep`): blocks go
to the batcher in (round, worker, split) order whatever order they arrive in; iteration `k` is
published only once every rollout acting with earlier weights is complete, and the next iteration
is trained only after that publish (the published weights are the only copy inference reads); the
run's frame budget fixes how many iterations are trained, the last ones at the final checkpoint.
Training runs on this process's main thread, so that publishing and training keep their order."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from queue import Empty
from typing import Any

import torch

from surge.learning.base import LearnerBase
from surge.learning.batcher import Batcher
from surge.runtime.learner_commands import run_commands
from surge.runtime.lockstep import BlockOrder, Schedule
from surge.runtime.messages import BlockReady
from surge.runtime.process_context import LearnerContext

log = logging.getLogger("surge")

#: at the final checkpoint, how long the learner waits for the blocks of the iterations the budget
#: trains (the workers delivered them right after their last counted step)
FINAL_BLOCKS_TIMEOUT_SEC = 60.0


def collect_lockstep(
    ctx: LearnerContext,
    learner: LearnerBase,
    batcher: Batcher,
    train: Callable[[torch.Tensor, int], None],
    publish: Callable[[], None],
    do: Callable[[Any], None],
    beat: Callable[[], None],
) -> None:
    """The learner's loop; returns on `StopCommand`.

    Args:
        train: `train(slots, env_frames)` trains one iteration on the slots `[T]` int64 (and gives
            them back to the pool); `env_frames` is the frames of the iterations before it, so a
            schedule sees the same value in every run.
        publish: writes the learner's weights to the shared weights.
        do: runs a command (checkpoints and the other commands, in order with the batches).
        beat: the learner's heartbeat while it waits.
    """
    shared, p = ctx.shared, ctx.policy_id
    cfg = shared.layout().cfg
    pool = shared.block_pool
    num_owners = cfg.num_workers * cfg.worker_num_splits
    order = BlockOrder(pool.blocks_per_owner * pool.block_size, num_owners)
    # the env steps the workers count per round: one per agent step of a batched env's sub-env, one
    # per env step of a multi-agent env (`EnvInfo.agents_per_step`)
    round_slots = num_owners * pool.block_size
    schedule = Schedule(
        round_slots, batcher.traj_per_batch, round_slots * cfg.rollout // shared.info.agents_per_step
    )
    frames_per_iteration = batcher.traj_per_batch * cfg.rollout * shared.info.frameskip
    assert shared.lockstep_rounds is not None
    allowed = shared.lockstep_rounds.numpy()
    budget, env_steps = shared.env_steps_budget.numpy(), shared.env_steps.numpy()
    allowed[p] = schedule.last_round(0)  # the weights published at the start are iteration 0's
    trained, unpublished = 0, False

    def receive(timeout: float) -> None:
        """Takes the blocks received (waiting up to `timeout` for one when > 0) in order."""
        try:
            msg: BlockReady
            got = ctx.learner_queue.get_many(timeout=timeout, block=timeout > 0)
            for msg in got:  # decoded by `BLOCK_CODEC`
                order.add(msg.first_slot, msg.slots)
        except Empty:
            return
        for first, slots in order.pop_ready():
            batcher.add(first, slots)

    def train_next() -> bool:
        nonlocal trained
        taken = batcher.take()
        if taken is None:
            return False
        train(torch.tensor(taken, dtype=torch.int64), trained * frames_per_iteration)
        trained += 1
        return True

    def finish() -> None:
        """The iterations the budget trains that are not trained yet (when the budget ended the
        run; a run stopped before it keeps what it trained)."""
        limit = schedule.iteration_limit(int(budget[0]))
        if int(env_steps.sum()) < int(budget[0]):
            return
        deadline = time.monotonic() + FINAL_BLOCKS_TIMEOUT_SEC
        while trained < limit and time.monotonic() < deadline:
            beat()
            if not train_next():
                receive(0.05)
        if trained < limit:
            log.warning("Learner %d: trained %d of the budget's %d iterations at the stop", p, trained, limit)

    while True:
        beat()
        if run_commands(ctx.command_queue, do, before_final=finish):
            return
        busy = False
        if unpublished and order.rounds_done > schedule.last_round(trained - 1):
            # every rollout acting with iteration trained - 1's weights is complete
            publish()
            allowed[p] = schedule.last_round(trained)
            unpublished, busy = False, True
        if not unpublished and trained < schedule.iteration_limit(int(budget[0])) and train_next():
            unpublished = busy = True
        # waits for a block only when there was nothing to do: collection may wait for the publish
        receive(0.0 if busy else 0.05)
