"""A child process's bond to its parent, for every child surge starts (the async placement's
processes, a Doom match's player processes): it dies with its parent (`die_with_parent`) and
writes its Python stack on `STACK_SIGNAL` when asked. It imports nothing of surge, so the lowest
layers (envs/doom/multiplayer) use it as the runtime does (`surge.runtime.child_start`,
`surge.runtime.process_setup`)."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from typing import Any

__all__ = ["STACK_SIGNAL", "die_with_parent"]

#: Linux prctl option: the signal the kernel sends this process when its parent thread dies
_PR_SET_PDEATHSIG = 1
#: a child writes every thread's Python stack (to the run's log, else stderr) on this signal
STACK_SIGNAL = signal.SIGUSR1


def _leave_fork_server() -> None:
    """A child of the fork server closes its copy of the server's "alive" pipe, which every client
    of the server holds (multiprocessing.forkserver): where the kernel cannot kill the server with
    the main process (`fork_server_init`: Linux only), the server then still exits once the main
    process is gone, whatever its children do. Nothing for a spawned child."""
    from multiprocessing import forkserver

    server: Any = getattr(forkserver, "_forkserver", None)  # the one server this process knows of
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None and server._forkserver_pid is None:  # inherited, not a server of its own
        server._forkserver_alive_fd = None
        try:
            os.close(fd)
        except OSError:
            pass


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

    A child of the fork server (`process_context`) has the server as its parent, and the kernel
    kills the server when the main process dies (`fork_server_init`): the signal reaches the child
    one death later. Its check is that the main process (`multiprocessing.parent_process()`) is
    still alive, which also covers a main process that died before this call.
    """
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux/glibc: no such guard, only the check below
        pass
    _leave_fork_server()
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    if os.getppid() != parent.pid and not parent.is_alive():
        os._exit(1)
