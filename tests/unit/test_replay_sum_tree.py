"""The vectorised sum tree (surge.replay.sum_tree) against a plain array of leaves."""

from __future__ import annotations

import time

import numpy as np
import pytest

from surge.replay import SumTree


def test_consistent_after_a_million_random_batched_updates():
    rng = np.random.default_rng(0)
    size = 100_003  # not a power of two: padding leaves must stay 0
    tree = SumTree(size)
    leaves = np.zeros(size)
    start = time.perf_counter()
    for _ in range(1000):  # 1,000 batches of 1,000 = 1,000,000 updates, repeated indices included
        idx = rng.integers(0, size, 1000)
        vals = rng.random(1000) * (rng.random(1000) < 0.9)  # some zeros
        tree.update(idx, vals)
        # numpy assignment: the last of repeated indices wins, as in the tree
        leaves[idx] = vals
    elapsed = time.perf_counter() - start
    np.testing.assert_array_equal(tree.leaves(), leaves)
    tree.check()  # every internal node == the sum of its children, padding 0, num_nonzero
    assert tree.total == pytest.approx(leaves.sum(), rel=1e-12)
    assert tree.num_nonzero == int((leaves > 0).sum())
    assert elapsed < 60.0  # ~1.3 s on the idle 2-core dev machine; only a gross slowdown fails


def test_find_matches_a_cumulative_sum_search():
    rng = np.random.default_rng(1)
    size = 1000
    tree = SumTree(size)
    vals = rng.random(size) * (rng.random(size) < 0.7)
    tree.update(np.arange(size), vals)
    u = rng.random(20_000) * vals.sum()
    leaf, p = tree.find(u)
    cum = np.cumsum(vals)
    expected = np.searchsorted(cum, u, side="right")
    # rounding at the exact boundaries may differ between the two sums; never a zero leaf
    assert (leaf == expected).mean() > 0.999
    assert (p > 0).all() and (vals[leaf] == p).all()
    # the ends of the range land on the first and last non-zero leaves
    nz = np.nonzero(vals)[0]
    ends, _ = tree.find(np.array([0.0, tree.total, 2 * tree.total]))
    assert ends.tolist() == [nz[0], nz[-1], nz[-1]]


def test_bad_values_and_indices_are_refused():
    tree = SumTree(5)
    with pytest.raises(IndexError):
        tree.update(np.array([5]), np.array([1.0]))
    with pytest.raises(ValueError):
        tree.update(np.array([0]), np.array([np.nan]))
    with pytest.raises(ValueError):
        tree.update(np.array([0]), np.array([-1.0]))
    with pytest.raises(ValueError, match="empty"):
        tree.find(np.array([0.0]))
    with pytest.raises(ValueError):
        SumTree(0)


def test_single_leaf_tree():
    tree = SumTree(1)
    tree.update(np.array([0]), np.array([2.0]))
    leaf, p = tree.find(np.array([0.0, 1.9]))
    assert leaf.tolist() == [0, 0] and p.tolist() == [2.0, 2.0]
