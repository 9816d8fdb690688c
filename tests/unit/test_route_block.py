"""Routing finished trajectories to learners (`surge.data.routing`) against a naive loop, and the
batcher's whole-arrival batches."""

import numpy as np

from surge.data.routing import route_block
from surge.learning.batcher import Batcher


def _naive(slots, policy_id, is_active, learning):
    out = {}
    for p in learning:
        own = [
            int(s)
            for i, s in enumerate(slots)
            if any(policy_id[i, t] == p and is_active[i, t] for t in range(policy_id.shape[1]))
        ]
        if own:
            out[p] = None if len(own) == len(slots) else tuple(own)
    return out


def test_route_block_matches_a_naive_loop():
    rng = np.random.default_rng(0)
    for case in range(200):
        n, T = int(rng.integers(1, 9)), int(rng.integers(1, 6))
        slots = np.sort(rng.choice(100, n, replace=False)).astype(np.int64)
        pid = np.repeat(rng.integers(0, 3, (n, 1)), T, axis=1).astype(np.int8)
        if case % 2:  # some trajectories change policy at an episode boundary
            switch = rng.integers(0, T, n)
            pid[np.arange(T)[None, :] >= switch[:, None]] = rng.integers(0, 3)
        active = rng.random((n, T)) > (0.3 if case % 3 == 0 else 0.0)
        learning = [0, 2] if case % 5 == 0 else [0, 1, 2]  # policy 1 frozen: its steps go nowhere
        assert route_block(slots, pid, active, learning) == _naive(slots, pid, active, learning)


def test_batcher_takes_whole_arrivals_oldest_first_and_put_back_restores_them():
    b = Batcher(traj_per_batch=4, block_size=4, whole_arrivals=True)
    b.add(8)  # a whole block: slots 8..11
    assert b.take() == [8, 9, 10, 11]
    b.add(0, (1, 3))
    b.add(4, (5,))
    assert b.take() is None  # 3 < 4
    b.add(12, (12, 13))
    batch = b.take()
    assert batch == [1, 3, 5, 12, 13]  # rounded up to whole arrivals
    b.add(16, (16, 17, 18, 19))
    b.put_back(batch)  # untrained: first again
    assert b.take() == batch and b.take() == [16, 17, 18, 19] and b.take() is None


def _naive_batches(arrivals: list[list[int]], per_batch: int) -> list[list[int]]:
    """The reference: every slot in arrival order, cut into batches of `per_batch` (the rest,
    short of a batch, stays pending), as Sample Factory's learner takes `batch_size` samples."""
    flat = [s for a in arrivals for s in a]
    return [flat[i : i + per_batch] for i in range(0, len(flat) - per_batch + 1, per_batch)]


def test_batcher_takes_exactly_a_batch_and_starts_the_next_with_the_rest_of_a_split_arrival():
    rng = np.random.default_rng(0)
    for per_batch, block in [(16, 20), (16, 10), (6, 4), (3, 8), (4, 4)]:
        b = Batcher(traj_per_batch=per_batch, block_size=block)
        arrivals, taken, next_slot = [], [], 0
        for _ in range(40):
            if rng.random() < 0.5:  # a whole block
                b.add(next_slot)
                arrivals.append(list(range(next_slot, next_slot + block)))
            else:  # a policy's share of one
                own = sorted(rng.choice(block, int(rng.integers(1, block + 1)), replace=False) + next_slot)
                b.add(next_slot, tuple(int(x) for x in own))
                arrivals.append([int(x) for x in own])
            next_slot += block
            while (batch := b.take()) is not None:
                taken.append(batch)
        assert taken == _naive_batches(arrivals, per_batch), (per_batch, block)
        assert b.count == sum(map(len, arrivals)) - per_batch * len(taken) < per_batch


def test_batcher_put_back_of_an_exact_batch_gives_it_again_then_the_rest():
    b = Batcher(traj_per_batch=6, block_size=4)
    b.add(0)
    b.add(4)  # slots 0..7
    batch = b.take()
    assert batch == [0, 1, 2, 3, 4, 5] and b.count == 2
    b.put_back(batch)
    assert b.take() == batch and b.take() is None
    b.add(8)
    assert b.take() == [6, 7, 8, 9, 10, 11]
