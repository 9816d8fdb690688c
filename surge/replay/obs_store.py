"""How a replay ring stores observations: whole observations per row (`PlainObs`), or one frame
per row with stacks rebuilt at sampling (`surge.replay.frames.FrameObs`).

Both follow one small contract, used by `surge.replay.ring.RingStore`:

- `write(ring, rows, cols, obs, episode_start, stream_start)`: rows `[T+1, n]` int64 (ring rows of
  a block's T+1 observations, the last being the bootstrap observation), cols `[n]` int64, obs
  `[T+1, n, ...]`, episode_start `[T+1, n]` bool (row s is the first observation of an episode:
  the step before it ended one), stream_start `[n]` bool (the block does not continue the column's
  previous one).
- `read(rows, cols)`: `[*rows.shape, ...]` observations (a dict of them for Dict spaces).
- `valid(ring, rows, cols)`: `[*rows.shape]` bool, whether `read` can rebuild that observation.
- `history`: how many rows before a row its observation needs (0 for plain storage).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from surge.data.trajectory import tree_map

Tree = Any


class PlainObs:
    """Stores each observation whole: `[capacity, num_columns, *obs_shape]` per (nested) key,
    allocated at the first write with the block's dtypes."""

    history = 0

    def __init__(self, capacity: int, num_columns: int):
        self.capacity, self.num_columns = capacity, num_columns
        self.data: Tree = None

    def check(self, obs: Tree) -> None:
        """Any observation tree is stored as it is."""

    def write(
        self, ring: Any, rows: Tensor, cols: Tensor, obs: Tree, episode_start: Tensor, stream_start: Tensor
    ) -> None:
        if self.data is None:
            self.data = tree_map(
                lambda x: torch.zeros(self.capacity, self.num_columns, *x.shape[2:], dtype=x.dtype), obs
            )
        _assign(self.data, (rows, cols[None]), obs)

    def read(self, rows: Tensor, cols: Tensor) -> Tree:
        return tree_map(lambda x: x[rows, cols], self.data)

    def valid(self, ring: Any, rows: Tensor, cols: Tensor) -> Tensor:
        return torch.ones(rows.shape, dtype=torch.bool)

    def nbytes(self) -> int:
        total = 0

        def add(x: Tensor) -> None:
            nonlocal total
            total += x.numel() * x.element_size()

        if self.data is not None:
            tree_map(add, self.data)
        return total

    def state_dict(self) -> dict[str, Any]:
        return {"data": self.data}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.data = state["data"]


def check_finite_obs(obs: Tree) -> None:
    """Raises ValueError when a floating-point observation of `obs` (a tensor or a dict of them) is
    not finite: surge's rollout worker replaces them with 0, and one reaching a replay would poison
    every sample of it."""
    for x in leaves(obs):
        if x.is_floating_point() and not bool(torch.isfinite(x).all()):
            raise ValueError("non-finite observation in a replay block")


def leaves(tree: Tree) -> list[Tensor]:
    """The tensors of a tensor or a (nested) dict of them."""
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in leaves(v)]
    return [tree]


def _assign(dst: Tree, index: Any, src: Tree) -> None:
    if isinstance(dst, dict):
        for k in dst:
            _assign(dst[k], index, src[k])
    else:
        dst[index] = src.to(dst.dtype)
