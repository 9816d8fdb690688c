"""An inference process's loop under `--deterministic=True` (`surge.runtime.lockstep`): each batch is
one split of every rollout worker this process serves, at the same step, in worker order, and the
splits take turns (split 0 of every worker, split 1, ..., split 0 again). A batch of rollout `r` runs
only once the learner published the weights of that round into one of its two slots
(`LockstepShared`), and acts with that slot's, so it acts with the weights the schedule gives it.
The free loop (`inference_process.py`) batches whatever requests arrived instead."""

from __future__ import annotations

import time
from queue import Empty

from torch import nn

from surge.runtime.lockstep import slot_of
from surge.runtime.messages import request_slots
from surge.runtime.process_context import InferenceContext
from surge.runtime.shared_state import SharedWeights
from surge.sampling.inference import InferenceWorker
from surge.sampling.inference_loop import InferenceLoop

#: the wait for new requests while a complete batch waits for the learner's weights
BLOCKED_POLL_SEC = 0.002


class SlotWeights:
    """The weights source of a lockstep inference loop (`WeightsSource`): the slot `current`. Its
    write counter is told apart per slot, so a switch of slot reloads the model."""

    def __init__(self, slots: list[SharedWeights]):
        self.slots, self.current = slots, 0

    def read_seq(self) -> int:
        return self.slots[self.current].read_seq() * len(self.slots) + self.current

    def load_into(self, model: nn.Module) -> int | None:
        return self.slots[self.current].load_into(model)


def serve_lockstep(ctx: InferenceContext, inference: InferenceWorker, beat_index: int) -> None:
    """Serves the requests of `ctx` in the fixed order until the run stops.

    Rollout workers `w` with `w % policy_workers_per_policy == ctx.index` are served (the free
    loop's assignment); a split's requests carry its index in their tag (`tag % worker_num_splits`,
    `rollout_process._Requester`). Each split index counts the batches it ran: batch `n` belongs
    to rollout `n // rollout`."""
    shared, p = ctx.shared, ctx.policy_id
    cfg = shared.layout().cfg
    assert shared.lockstep is not None
    rounds = shared.lockstep.rounds[p].numpy()
    source = SlotWeights(shared.lockstep.slots[p])
    loop = InferenceLoop(inference, source)
    splits, rollout = cfg.worker_num_splits, cfg.rollout
    served = [w for w in range(cfg.num_workers) if w % cfg.policy_workers_per_policy == ctx.index]
    pending: list[dict[int, tuple[int, int, int, int]]] = [{} for _ in range(splits)]
    batches = [0] * splits  # batches run per split index
    turn = 0  # the split index whose batch runs next
    answered: dict[int, tuple[int, int]] = {}  # first_slot -> (tag, t) of the latest request taken
    stop_flag, request_queue = shared.stop_flag, ctx.request_queue
    beats = shared.heartbeats.numpy()
    blocked = False
    while not stop_flag.is_set():
        beats[beat_index] = time.monotonic()
        try:
            msgs = request_queue.get_many(timeout=BLOCKED_POLL_SEC if blocked else 0.1)
        except Empty:
            msgs = []
        for worker_idx, tag, first, n, t in msgs:  # plain `PolicyRequest` tuples
            if answered.get(first) == (tag, t):  # sent twice (to a replacement of this worker)
                continue
            answered[first] = (tag, t)
            pending[tag % splits][worker_idx] = (tag, first, n, t)
        blocked = False
        while served and len(group := pending[turn]) == len(
            served
        ):  # (none: more inference workers than rollout workers)
            slot = slot_of(rounds, batches[turn] // rollout)
            if slot < 0:
                blocked = True  # the learner has not published this round's weights yet
                break
            source.current = slot
            loop.handle([(request_slots(group[w][1], group[w][2]), group[w][3]) for w in served])
            for w in served:
                ctx.worker_queues[w].put((group[w][0], p))  # a plain `ActionsReady`
            pending[turn] = {}
            batches[turn] += 1
            turn = (turn + 1) % splits
