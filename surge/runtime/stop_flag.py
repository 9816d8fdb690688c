"""The stop flag of an async run: one byte of torch shared memory that the main process sets and
every child polls (`is_set`, `wait`).

It replaces a `multiprocessing.Event`, which is five named POSIX semaphores (`/dev/shm/sem.mp-*`).
Those names outlive a process tree killed as a whole with SIGKILL (the resource tracker that would
unlink them dies with it); CI runs left five per run that way. Torch's shared memory is unlinked
at creation and passed to the children as a file descriptor, so nothing is left to clean up
whatever kills the run.
"""

from __future__ import annotations

import time
from typing import Any

import torch

#: seconds between two reads of the flag in `wait` (how late a waiting loop sees a stop at most)
POLL_SEC = 0.01


class StopFlag:
    """`set` once; `is_set` and `wait` in any process of the run. Picklable to spawned children
    (through torch.multiprocessing, which shares the byte's memory)."""

    def __init__(self) -> None:
        self._init(torch.zeros(1, dtype=torch.uint8).share_memory_())

    def _init(self, t: torch.Tensor) -> None:
        self._tensor = t
        self._byte = t.numpy()  # a plain array read: no torch dispatch per check

    def __getstate__(self) -> dict[str, Any]:
        return {"tensor": self._tensor}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._init(state["tensor"])

    def set(self) -> None:
        self._byte[0] = 1

    def is_set(self) -> bool:
        return bool(self._byte[0])

    def wait(self, timeout: float) -> bool:
        """Returns True as soon as the flag is set (checked every `POLL_SEC`), False after
        `timeout` seconds without it."""
        deadline = time.monotonic() + max(0.0, timeout)
        while not self._byte[0]:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(POLL_SEC, left))
        return True
