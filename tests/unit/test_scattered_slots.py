"""With several policies a learner holds only its own trajectories, so a split may have to fill
scattered (non-contiguous) free slots (`surge.data.block_pool.OwnerBlocks.get`). The async
placement's `PolicyRequest` must then name those slots (`surge.runtime.messages.wire_slots`):
inference writes each step's actions and `policy_version` there and nowhere else. Before the fix,
the request sent `(first slot, count)` and inference acted on the contiguous range from the first
slot: it overwrote a slot a learner held and left one of the split's own without actions (seen in
a doom_duel PBT run as a negative policy lag)."""

import torch

from surge.app.resolve import parse_cfg
from surge.runtime.components import build_components
from surge.runtime.messages import request_slots, wire_slots

BLOCK = 4  # agents of a split: 4 CartPole envs


def test_inference_acts_on_a_scattered_splits_own_slots():
    cfg = parse_cfg(
        ["--env=CartPole-v1", "--num_policies=2", "--num_workers=1", "--num_envs_per_worker=4"]
        + ["--worker_num_splits=1", "--rollout=4", "--recurrence=4", "--batch_size=16", "--seed=3"]
    )
    c = build_components(cfg)
    worker, buf, pool = c.workers[0], c.layout.buffers, c.layout.block_pool
    worker.reset()
    split = worker.splits[0]
    assert split.index == slice(0, BLOCK)  # the first block: one rollout there
    for _ in range(cfg.rollout):
        request, t = worker.policy_request(0)
        for p in worker.request_policies(0):
            c.inferences[p].infer([(request, t)])
        finished = worker.advance(0)
    assert finished is not None  # (not handed over: the block stays busy)
    # learner 1 holds the first slot of every other block: no whole block is free
    for first in range(BLOCK, pool.num_slots, BLOCK):
        pool.held[first, 1] = 1
    assert worker.start_next_rollout(0)
    slots = split.slots
    assert not isinstance(split.index, slice), slots  # scattered
    held = [s for s in range(BLOCK, pool.num_slots, BLOCK)]
    assert not set(held) & set(slots.tolist())
    buf.policy_version.fill_(-1)
    for p, inference in enumerate(c.inferences):
        inference.policy_version = 100 + p
    for _ in range(cfg.rollout):
        request, t = worker.policy_request(0)
        first, n = wire_slots(split.index)
        for p in worker.request_policies(0):
            c.inferences[p].infer([(request_slots(first, n), t)])
        acting = buf.policy_id[slots, t].long()
        assert torch.equal(buf.policy_version[slots, t], 100 + acting), t
        others = torch.ones(pool.num_slots, dtype=torch.bool)
        others[slots] = False
        assert bool((buf.policy_version[others] == -1).all()), t  # nothing written elsewhere
        worker.advance(0)


def test_contiguous_slots_travel_as_first_and_count():
    assert wire_slots(slice(8, 12)) == (8, 4)
    assert request_slots(8, 4) == slice(8, 12)
    scattered = torch.tensor([5, 6, 7, 9])
    first, n = wire_slots(scattered)
    assert first == 5 and torch.equal(request_slots(first, n), scattered)
