"""The first code a spawned child of the async placement runs: tie its life to its parent's, then
load its context and run its role.

Why a module of its own, importing nothing heavy: a child made with the "spawn" start method
unpickles its target and arguments before running any code of ours, and for a surge role that
means importing torch and rebuilding its shared tensors: seconds of CPU time, tens of seconds on
a loaded machine. A main process killed in that time left the child running to the end of its
imports (at load 8, 4 of 5 children were alive 10 s after the kill). Here the role and its context
travel as one opaque blob (`ChildTask`), unpickled only after `die_with_parent` ran, so the window
in which a dead parent goes unnoticed is the interpreter's own start (tens of ms of CPU).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from collections.abc import Callable
from multiprocessing.reduction import ForkingPickler
from typing import Any

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Linux: the kernel sends SIGKILL to this process when its parent dies (even by SIGKILL), with
    no need for this process to be scheduled to notice it.

    A parent that died before this call has already left this process to init (or a subreaper),
    which the kernel never signals for: the process then exits at once (status 1) instead of
    waiting for a stop that no one will send. SIGKILL, not SIGTERM: surge's children ignore SIGTERM
    (the main process coordinates the stop), and a killed child's shared memory needs no cleanup of
    its own (tensors are shared by file descriptor; the resource tracker unlinks semaphores when
    the last process that holds it is gone). The signal is tied to the parent *thread* that spawned
    this process: the async placement spawns from the main process's main thread only.
    """
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux/glibc: no such guard, only the check below
        pass
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        os._exit(1)


class ChildTask:
    """`fn(context)` pickled into bytes when the process is spawned, unpickled only by `run`.

    Pickled (by the spawning `Process.start`) it becomes a `ChildTask` holding the bytes of
    `(fn, context)`, made with multiprocessing's `ForkingPickler` inside the spawn's own pickling,
    so shared tensors, queues and semaphores travel exactly as they would as plain arguments (their
    file descriptors are passed to the child by the same spawn).
    """

    def __init__(self, fn: Callable[[Any], None], context: Any):
        self._fn: Callable[[Any], None] | None = fn
        self._context = context
        self._blob: bytes | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        blob = bytes(ForkingPickler.dumps((self._fn, self._context)))
        return (ChildTask._from_blob, (blob,))

    @classmethod
    def _from_blob(cls, blob: bytes) -> ChildTask:
        task = cls.__new__(cls)
        task._fn, task._context, task._blob = None, None, blob
        return task

    def run(self) -> None:
        """Unpickles `(fn, context)` (imports `fn`'s module) and calls `fn(context)`."""
        if self._blob is not None:
            self._fn, self._context = ForkingPickler.loads(self._blob)
            self._blob = None
        assert self._fn is not None
        self._fn(self._context)


def child_main(task: ChildTask) -> None:
    """Target of every process the async placement spawns: `die_with_parent`, then `task.run()`."""
    die_with_parent()
    task.run()
