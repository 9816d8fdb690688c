"""A learner process's main loop under `--deterministic=True` (`surge.runtime.lockstep`): blocks go
to the batcher in (round, worker, split) order whatever order they arrive in; each acting version
goes into its weight slot once the slot is free (a staging copy holds it until then), while the
learner trains on; every iteration is also published to the policy's shared weights (what the main
process and the evaluator read); the run's frame budget fixes how many iterations are trained, the
last ones at the final checkpoint. Training runs on this process's main thread, so that publishing
and training keep their order."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from queue import Empty
from typing import Any

import torch
from torch import nn

from surge.learning.base import LearnerBase
from surge.learning.batcher import Batcher
from surge.runtime.learner_commands import run_commands
from surge.runtime.lockstep import NO_ROUNDS, BlockOrder, Schedule, pack_rounds
from surge.runtime.messages import BlockReady
from surge.runtime.process_context import LearnerContext
from surge.runtime.shared_state import SharedWeights

log = logging.getLogger("surge")

#: at the final checkpoint, how long the learner waits for the blocks of the iterations the budget
#: trains (the workers delivered them right after their last counted step)
FINAL_BLOCKS_TIMEOUT_SEC = 60.0
#: acting versions trained ahead of a free slot, at most (each held in a staging copy)
MAX_STAGED = 2


def collect_lockstep(
    ctx: LearnerContext,
    learner: LearnerBase,
    model: nn.Module,
    batcher: Batcher,
    train: Callable[[torch.Tensor, int], None],
    do: Callable[[Any], None],
    beat: Callable[[], None],
) -> None:
    """The learner's loop; returns on `StopCommand`.

    Args:
        model: the acting model whose weights are published (`learner.policy_version` with them).
        train: `train(slots, env_frames)` trains one iteration on the slots `[T]` int64 (and gives
            them back to the pool); `env_frames` is the frames of the iterations before it, so a
            schedule sees the same value in every run.
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
    assert shared.lockstep is not None
    weight_slots, rounds = shared.lockstep.slots[p], shared.lockstep.rounds[p].numpy()
    budget, env_steps = shared.env_steps_budget.numpy(), shared.env_steps.numpy()
    held = [-1, -1]  # the iteration whose weights each slot holds
    staged: list[tuple[int, SharedWeights]] = []  # acting versions waiting for their slot, oldest first
    spare: list[SharedWeights] = []  # staging copies to reuse
    placed = 0  # acting versions in the slots so far: the next one goes to slot `placed % 2`
    trained = 0
    version_of = {0: learner.policy_version}  # acting version (iteration) -> its policy_version
    stamped, handed = shared.buffers.policy_version, [0]  # blocks handed to the batcher so far

    def place(k: int, staging: SharedWeights | None) -> bool:
        """Writes acting version `k` (the model's weights, or `staging`'s) into its slot when every
        rollout acting with the slot's previous version is complete; False while one is not."""
        nonlocal placed
        slot = placed % 2
        if held[slot] >= 0 and order.rounds_done <= schedule.last_round(held[slot]):
            return False
        rounds[slot] = NO_ROUNDS  # no round reads the slot while it is written
        if staging is None:
            weight_slots[slot].publish(model, learner.policy_version)
        else:
            weight_slots[slot].publish_copy(staging)
            spare.append(staging)
        rounds[slot] = pack_rounds(schedule.first_round(k), schedule.last_round(k))
        held[slot], placed = k, placed + 1
        return True

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
            check_stamps(first, slots)
            batcher.add(first, slots)

    def check_stamps(first: int, slots: tuple[int, ...] | None) -> None:
        """The schedule as acted: every step of the block's rollout carries the policy_version of
        the weights its round acts with (a guard: a mismatch is a bug of the schedule)."""
        r = handed[0] // num_owners
        handed[0] += 1
        rows = list(slots) if slots is not None else list(range(first, first + pool.block_size))
        want = version_of[schedule.acting_iteration(r)]
        got = stamped[rows]
        if not bool((got == want).all()):
            raise RuntimeError(
                f"--deterministic: a block of round {r} acted with policy versions "
                f"{sorted(set(got.flatten().tolist()))}, the schedule's is {want} (iteration "
                f"{schedule.acting_iteration(r)}): the fixed schedule was not kept"
            )

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

    place(0, None)  # the weights at the start (published there too) are iteration 0's
    while True:
        beat()
        if run_commands(ctx.command_queue, do, before_final=finish):
            return
        busy = False
        while staged and place(*staged[0]):
            staged.pop(0)
            busy = True
        if len(staged) < MAX_STAGED and trained < schedule.iteration_limit(int(budget[0])) and train_next():
            busy = True
            shared.weights[p].publish(model, learner.policy_version)
            if schedule.acts(trained):
                version_of[trained] = learner.policy_version
                if staged or not place(trained, None):  # in order: after those staged before it
                    copy = spare.pop() if spare else SharedWeights(model)
                    copy.publish(model, learner.policy_version)
                    staged.append((trained, copy))
        # waits for a block only when there was nothing to do: collection may wait for a slot
        receive(0.0 if busy else 0.05)
