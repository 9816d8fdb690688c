"""What every child process of the async placement does first: die with its parent, ignore
Ctrl+C (the main process coordinates the stop), set niceness, CPU affinity and thread counts, and
report a crash with its traceback instead of dying silently."""

from __future__ import annotations

import ctypes
import os
import signal
import traceback
from collections.abc import Callable
from typing import Any

import torch

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Linux: the kernel sends SIGKILL to this process when its parent dies (even by SIGKILL)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def setup_child(
    name: str,
    niceness: int = 0,
    cpu: int | None = None,
    torch_threads: int = 1,
    single_thread_envs: bool = False,
) -> None:
    """Prepares a child process (see the module docstring)."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if niceness:
        try:
            os.nice(niceness)
        except OSError:
            pass
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[cpu % len(cores)]})
    torch.set_num_threads(max(1, torch_threads))
    if single_thread_envs:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    try:
        import setproctitle  # optional: nicer `ps` output

        setproctitle.setproctitle(f"surge:{name}")
    except ImportError:
        pass


def run_child(name: str, report_queue: Any, fn: Callable[[], None]) -> None:
    """Runs `fn`; on an exception, puts ("error", name, traceback text) on the report queue."""
    try:
        fn()
    except BaseException:  # noqa: BLE001 - everything is reported to the main process
        try:
            report_queue.put(("error", name, traceback.format_exc()), timeout=5.0)
        except Exception:  # noqa: BLE001
            pass
        raise
