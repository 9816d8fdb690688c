"""A process's inbox that survives the SIGKILL of its reader: a shared-memory queue (faster-fifo)
that is only ever read without blocking, and a doorbell pipe the reader sleeps on.

Why not a plain faster-fifo queue: a reader blocked in `get` waits on the queue's process-shared
condition variable. When that reader is killed in the wait (where an idle rollout or inference
worker spends most of its time), the queue keeps counting it as a waiter, every later `put`
signals the condition variable, and glibc's signal then blocks for ever waiting for the dead
waiter, holding the queue's mutex: every process that touches the queue stalls. Replacing the
killed process cannot help. Here no process ever waits on the condition variable, so a `put`
never signals it; the reader sleeps in `poll()` on a pipe, which the kernel cleans up whatever
happens to its holders. What remains is a kill inside the queue's mutex itself (a few
microseconds per call).

Writers: `put(msg)` appends to the queue, then, if the reader said it may sleep, writes one byte
to the doorbell (non-blocking: a full doorbell already wakes the reader). Reader:
`get_many(timeout)` raises its sleeping flag, takes what is queued, and when nothing is, sleeps
until the doorbell rings or the timeout passes, empties the doorbell with one read when it rang,
and looks again; it lowers the flag when it returns. The flag spares a busy reader's writers the
system call. No wake-up is lost: the queue's mutex operations are full memory barriers, so a
writer that read the flag down had its message queued before the reader raised the flag and
looked. A ring whose message was already taken (its writer saw the flag up while the reader was
finding messages) only makes a later sleep look at the queue once more.

Messages are pickled with plain `pickle` (highest protocol), not multiprocessing's
`ForkingPickler`, whose per-call set-up is ten times the cost of pickling a small tuple: an inbox
carries plain tuples of numbers (`surge.runtime.messages`), never shared-memory tensors or file
descriptors, which only `ForkingPickler` could send.
"""

from __future__ import annotations

import functools
import os
import pickle
import select
import time
from queue import Empty
from typing import Any


class Inbox:
    """See the module docstring. Made in the main process and handed to children when they are
    spawned (the queue's memory and the pipe's descriptors travel with the process arguments).

    Args:
        max_size_bytes: capacity of the queue's shared buffer.
    """

    def __init__(self, max_size_bytes: int):
        from multiprocessing import get_context

        from faster_fifo import Queue

        self.queue = Queue(
            max_size_bytes=max_size_bytes,
            dumps=functools.partial(pickle.dumps, protocol=pickle.HIGHEST_PROTOCOL),
        )
        # multiprocessing's Connection objects carry the descriptors to spawned children
        self._bell_r, self._bell_w = get_context("spawn").Pipe(duplex=False)
        # the descriptors' open file descriptions (and so O_NONBLOCK) are shared with every child
        os.set_blocking(self._bell_r.fileno(), False)
        os.set_blocking(self._bell_w.fileno(), False)
        self._sleeping = get_context("spawn").RawValue("b", 0)  # the reader waits on the doorbell
        self._poller: Any = None
        # ints: Connection.fileno() is a Python call
        self._bell_fd, self._bell_rfd = self._bell_w.fileno(), self._bell_r.fileno()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_poller"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # the descriptors' numbers in this process
        self._bell_fd, self._bell_rfd = self._bell_w.fileno(), self._bell_r.fileno()

    def put(self, msg: Any) -> None:
        """Appends `msg` (pickled) and rings the doorbell if the reader sleeps."""
        self.queue.put(msg)
        if not self._sleeping.value:
            return
        try:
            os.write(self._bell_fd, b"\0")
        except BlockingIOError:  # the doorbell is full: the reader wakes anyway
            pass

    def _setup_reader(self) -> None:
        self._poller = select.poll()
        self._poller.register(self._bell_rfd, select.POLLIN)

    def get_many(self, timeout: float = 0.0, block: bool = True) -> list[Any]:
        """Every queued message (oldest first), waiting up to `timeout` seconds for one when none
        is queued (not at all with `block=False`).

        Raises:
            queue.Empty: nothing arrived in time.
        """
        q = self.queue
        if not block or timeout <= 0:
            return q.get_many(block=False)
        if self._poller is None:
            self._setup_reader()
        # raised before the first look: an idle reader (the common case) then looks once before
        # sleeping, and a writer that saw the flag up while the reader found messages only
        # leaves a byte that makes a later sleep look once more
        self._sleeping.value = 1
        deadline = 0.0
        try:
            while True:
                try:
                    return q.get_many(block=False)
                except Empty:
                    pass
                now = time.monotonic()
                if not deadline:
                    deadline = now + timeout
                left = deadline - now
                if left <= 0 or not self._poller.poll(left * 1000.0):
                    raise Empty
                try:  # one read empties it: it holds a few bytes at most (one per waking writer)
                    os.read(self._bell_rfd, 65536)
                except BlockingIOError:
                    pass
        finally:
            self._sleeping.value = 0
