"""A vectorised sum tree: the proportional sampler of prioritized experience replay.

Schaul et al. 2016, "Prioritized Experience Replay", section 3.3 and Appendix B.2.1: each leaf holds
a priority p_i^alpha, each internal node the sum of its two children, so drawing `u ~ U[0, total)`
and descending by prefix sums selects leaf i with probability `P(i) = p_i^alpha / sum_k p_k^alpha`
(eq. 1). Here a whole batch is updated and searched at once with numpy: one vector operation per
tree level (about log2(size) of them), no Python loop per sample.

Layout: a heap in one float64 array `tree` of `2 * num_leaves` entries, `num_leaves` the power of
two >= size; the root is `tree[1]`, the children of node k are `2k` and `2k + 1`, leaf i is
`tree[num_leaves + i]`; leaves >= size stay 0 and are never drawn. Internal nodes are recomputed
from their children (never updated by differences), so every node equals the float64 sum of its two
children exactly, however many updates were made. float64 as in rlpyt (its note: float32 trees
returned zero-priority leaves after rounding).
"""

from __future__ import annotations

import numpy as np
import torch


class SumTree:
    """Sum tree over `size` non-negative leaves (float64), with batched update and search.

    Args:
        size: number of leaves that can hold a priority (>= 1).
    Raises:
        ValueError: size < 1.
    """

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"a sum tree needs at least one leaf, got size={size}")
        self.size = int(size)
        self.num_leaves = 1 << max(0, (self.size - 1).bit_length())
        self.depth = self.num_leaves.bit_length() - 1  # levels below the root
        self.tree = np.zeros(2 * self.num_leaves, dtype=np.float64)
        self.num_nonzero = 0

    @property
    def total(self) -> float:
        """The sum of all leaves (the root)."""
        return float(self.tree[1])

    def get(self, indices: np.ndarray) -> np.ndarray:
        """Leaf values `[B]` float64 at `indices` `[B]` int64 (a copy)."""
        return self.tree[self.num_leaves + np.asarray(indices, dtype=np.int64)]

    def leaves(self) -> np.ndarray:
        """A view of the `size` leaves, float64 (do not write into it: use `update`)."""
        return self.tree[self.num_leaves : self.num_leaves + self.size]

    def update(self, indices: np.ndarray, values: np.ndarray) -> None:
        """Sets leaves `indices` `[B]` int64 to `values` `[B]` (or a scalar), float, >= 0, finite.
        With repeated indices the last value wins (numpy assignment). Then recomputes every
        ancestor from its children, one vector operation per level.

        Raises:
            IndexError: an index outside [0, size).
            ValueError: a negative or non-finite value.
        """
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size == 0:
            return
        vals = np.broadcast_to(np.asarray(values, dtype=np.float64), idx.shape)
        if idx.min() < 0 or idx.max() >= self.size:
            raise IndexError(f"sum tree index out of [0, {self.size})")
        if not np.isfinite(vals).all() or (vals < 0).any():
            raise ValueError("sum tree values must be finite and >= 0")
        pos = idx + self.num_leaves
        before = self.tree[pos] > 0
        self.tree[pos] = vals
        # repeated indices: count each leaf once, with its final value
        upos, first = np.unique(pos, return_index=True)
        self.num_nonzero += int((self.tree[upos] > 0).sum()) - int(before[first].sum())
        node = np.unique(upos >> 1)
        while node.size and node[0] >= 1:
            self.tree[node] = self.tree[2 * node] + self.tree[2 * node + 1]
            if node[0] == 1:
                break
            node = np.unique(node >> 1)

    def find(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Prefix-sum search: for each `u` in `values` `[B]` (in [0, total); clipped into it), the
        leaf i with `sum_{k<i} leaf_k <= u < sum_{k<=i} leaf_k`. Never returns a zero leaf.

        Returns:
            (indices `[B]` int64, their leaf values `[B]` float64).
        Raises:
            ValueError: the tree is empty (total 0).
        """
        total = self.total
        if total <= 0:
            raise ValueError("the sum tree is empty (every priority is 0)")
        u = np.clip(np.asarray(values, dtype=np.float64).reshape(-1), 0.0, np.nextafter(total, 0))
        node = np.ones(u.shape, dtype=np.int64)
        tree = self.tree
        for _ in range(self.depth):
            left = tree[2 * node]
            right = tree[2 * node + 1]
            go_right = (u >= left) & (right > 0)
            u = np.where(
                go_right, np.minimum(u - left, np.nextafter(right, 0)), np.minimum(u, np.nextafter(left, 0))
            )
            node = 2 * node + go_right
        leaf = node - self.num_leaves
        return leaf, tree[node]

    def check(self) -> None:
        """Raises AssertionError unless every internal node equals the sum of its children and the
        padding leaves are 0 (a consistency check for tests)."""
        t, n = self.tree, self.num_leaves
        assert (t[n + self.size :] == 0).all(), "padding leaves must stay 0"
        k = np.arange(1, n)
        bad = np.nonzero(t[k] != t[2 * k] + t[2 * k + 1])[0]
        assert bad.size == 0, f"{bad.size} internal nodes differ from the sum of their children"
        assert self.num_nonzero == int((t[n : n + self.size] > 0).sum()), "num_nonzero is stale"

    def state_dict(self) -> dict[str, object]:
        # the tree as a tensor: replay files load with torch.load(weights_only=True) (replay.persist)
        return {
            "size": self.size,
            "tree": torch.from_numpy(self.tree.copy()),
            "num_nonzero": self.num_nonzero,
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        """Raises ValueError when the saved tree has another size."""
        if int(state["size"]) != self.size:  # type: ignore[call-overload]
            raise ValueError(f"saved sum tree has {state['size']} leaves, this one {self.size}")
        self.tree[:] = np.asarray(state["tree"])
        self.num_nonzero = int(state["num_nonzero"])  # type: ignore[call-overload]
