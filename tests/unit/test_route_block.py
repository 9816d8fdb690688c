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
    b = Batcher(traj_per_batch=4, block_size=4)
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
