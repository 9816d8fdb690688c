"""The pool of free trajectory slots (indices into `TrajectoryBuffers`)."""

from __future__ import annotations

from collections import deque

import torch
from torch import Tensor


class SlotPool:
    """Free slot indices, handed out in blocks. Single-process; the async engine shares one
    through its own messaging."""

    def __init__(self, num_slots: int):
        self._free: deque[int] = deque(range(num_slots))

    def __len__(self) -> int:
        return len(self._free)

    def get(self, n: int) -> Tensor | None:
        """`n` free slots as an int64 tensor `[n]`, or None when fewer than `n` are free."""
        if len(self._free) < n:
            return None
        return torch.tensor([self._free.popleft() for _ in range(n)], dtype=torch.int64)

    def put(self, slots: Tensor) -> None:
        """Returns slots `[n]` to the pool once the learner is done with them."""
        self._free.extend(slots.tolist())
