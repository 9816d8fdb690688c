"""What every child process of the async placement does first: die with its parent, ignore
Ctrl+C (the main process coordinates the stop), keep freed tensor memory for reuse, set niceness,
CPU affinity and thread counts, report a crash with its traceback instead of dying silently, and
write its Python stack on `STACK_SIGNAL` (the main process asks for it before killing a hung child,
so the run's log says where it hung)."""

from __future__ import annotations

import ctypes
import faulthandler
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from surge.child_guard import STACK_SIGNAL, die_with_parent
from surge.runtime.experiment_folder import setup_logging
from surge.runtime.messages import ChildError

if TYPE_CHECKING:
    from surge.cfg.config import Config

__all__ = ["STACK_SIGNAL", "die_with_parent", "dump_stack", "retain_freed_memory", "run_child", "setup_child"]

log = logging.getLogger("surge")

_stack_file: Any = None  # kept open for faulthandler, which writes to its file descriptor

# glibc mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_ARENA_MAX")
#: allocations up to this size come from the heap, and up to this much freed memory at the heap's
#: top stays with the process (mallopt takes a C int: below 2 GiB)
MALLOC_MMAP_THRESHOLD = MALLOC_TRIM_THRESHOLD = 1 << 30  # bytes


def _libc() -> ctypes.CDLL:
    """The C library (glibc on Linux); OSError where there is none by that name."""
    return ctypes.CDLL("libc.so.6", use_errno=True)


def retain_freed_memory() -> bool:
    """Linux glibc: keeps tensor memory that torch frees inside the process for reuse.

    torch's CPU allocator is plain malloc, and glibc serves every allocation above its mmap
    threshold (at most 32 MiB by default) with a fresh `mmap` and unmaps it on free, so each
    training step pays a page fault per 4 KiB of every large activation, gradient and
    observation batch (a `[512, 4, 84, 84]` uint8 -> float32 conversion: 26.6 ms with, 3.0 ms
    without). This raises the mmap threshold and the trim threshold to 1 GiB and puts all
    threads on the main arena (a background thread's arena cannot hold blocks above 64 MiB): the
    memory reuse PyTorch's performance tuning guide gets from jemalloc or TCMalloc, with glibc's
    own `mallopt`. The process keeps its peak heap instead of returning it to the system (the
    pong_1epoch learner: 765 MB resident against 705 MB without) and trains faster (pong_1epoch
    async: 3773 / 3907 / 3505 env frames/s against 3370 / 3556 / 3167 without, alternating runs).

    Does nothing where a MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or MALLOC_ARENA_MAX
    environment variable is set (the user's choice wins) and off glibc. Returns whether it applied.
    """
    if any(k in os.environ for k in _MALLOC_ENV):
        return False
    try:
        mallopt = _libc().mallopt
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    except (OSError, AttributeError):
        return False
    settings = (
        (_M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD),
        (_M_TRIM_THRESHOLD, MALLOC_TRIM_THRESHOLD),
        (_M_ARENA_MAX, 1),
    )
    # a list, not a generator: every setting is tried even when an earlier one is refused
    return all([mallopt(param, value) == 1 for param, value in settings])


#: niceness of each kind of child above `--default_niceness` (the learner's). Rollout workers run
#: 10 above, as in Sample Factory 2 (its rollout_worker.py): the learner, usually the slowest stage,
#: wins the CPU when a rollout worker is runnable too, and rollout workers soak up what is left.
#: Inference workers run level with the rollout workers, not 2 above the learner as in Sample
#: Factory: where cores are short, an inference worker that preempts the rollout workers wakes for
#: each request and acts on little more than one split per forward pass, so it spends more CPU per
#: frame (docs/benchmarks.md, "Niceness"). The evaluator yields to all of them.
#:
#: Rollout workers that act themselves (`--policy_workers_per_policy=0`, "acting_rollout") run at
#: the lowest priority, 19: no step of theirs waits on another process, so all a stronger learner
#: priority changes is that the learner, then the slowest stage, is no longer preempted by them
#: (at + 10, CFS still gives a rollout worker a tenth of the learner's core). With inference
#: workers each step is a round trip between two processes, and every wake-up that waits behind
#: the learner slows the sampler: there the offsets stay at + 10 (docs/benchmarks.md, "Niceness").
NICENESS_OFFSET = {"learner": 0, "inference": 10, "rollout": 10, "acting_rollout": 19, "evaluator": 15}
MAX_NICENESS = 19  # Linux's largest


def role_niceness(default_niceness: int, role: str) -> int:
    """The niceness a child of kind `role` (a key of `NICENESS_OFFSET`) runs at:
    `default_niceness` + its offset, at most 19."""
    return min(default_niceness + NICENESS_OFFSET[role], MAX_NICENESS)


def child_niceness(cfg: Config, role: str) -> int:
    """The niceness of an async run's child of kind `role` ("learner", "inference", "rollout" or
    "evaluator") under `cfg`: `role_niceness`, where rollout workers that act themselves
    (`policy_workers_per_policy` 0) take the "acting_rollout" offset, and the evaluator runs at
    least at the rollout workers' niceness (it yields to them, or is level with them at 19)."""
    rollout = "acting_rollout" if cfg.policy_workers_per_policy == 0 else "rollout"
    if role == "rollout":
        return role_niceness(cfg.default_niceness, rollout)
    if role == "evaluator":
        return max(
            role_niceness(cfg.default_niceness, "evaluator"), role_niceness(cfg.default_niceness, rollout)
        )
    return role_niceness(cfg.default_niceness, role)


def setup_child(
    name: str,
    niceness: int = 0,
    cpu: int | None = None,
    torch_threads: int = 1,
    single_thread_envs: bool = False,
    log_file: Path | None = None,
) -> None:
    """Prepares a child process (see the module docstring); its "surge" log lines go to stderr and
    to `log_file` (the run's `surge_log.txt`, appended to by every process) when given."""
    try:
        import setproctitle  # optional: nicer `ps` output; first, so `ps` names it early

        setproctitle.setproctitle(f"surge:{name}")
    except ImportError:
        pass
    die_with_parent()
    setup_logging(log_file)
    retain_freed_memory()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    global _stack_file
    _stack_file = open(log_file, "a") if log_file is not None else sys.stderr  # noqa: SIM115
    faulthandler.register(STACK_SIGNAL, file=_stack_file, all_threads=True)
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
    log.info("Process %s: %d torch intra-op thread(s)", name, torch.get_num_threads())


def dump_stack(proc: Any, wait_sec: float = 1.0) -> bool:
    """Asks the live child `proc` (a `multiprocessing.Process` set up by `setup_child`) to write its
    Python stack (all threads) to the run's log, and gives it `wait_sec` seconds to do so: a hung
    child's stack says where it hangs (an env's `step`, a queue). faulthandler writes from its C
    signal handler, so a child stuck in C code (an emulator) answers too. Returns whether the signal
    was sent."""
    import time

    if not proc.is_alive() or proc.pid is None:
        return False
    try:
        os.kill(proc.pid, STACK_SIGNAL)
    except OSError:
        return False
    time.sleep(wait_sec)
    return True


def run_child(name: str, report_queue: Any, fn: Callable[[], None]) -> None:
    """Runs `fn`; on an exception, puts `ChildError(name, traceback text)` on the report queue.

    An `Exception` so reported ends the process with exit code 1 (SystemExit), not by propagating:
    multiprocessing would print the same traceback again on stderr, which the main process logs.
    """
    try:
        fn()
    except BaseException as e:  # noqa: BLE001 - everything is reported to the main process
        try:
            report_queue.put(ChildError(name, traceback.format_exc()), timeout=5.0)
        except Exception:  # noqa: BLE001 - not reported: let multiprocessing print it
            raise e from None
        if isinstance(e, Exception):
            raise SystemExit(1) from None
        raise


def thread_oversubscription(cfg: Config, num_learners: int, cores: int) -> str | None:
    """The run's-log warning when the async placement's model processes together ask for more
    torch threads than the machine has cores, else None. Each learner runs `--num_torch_threads`
    threads (0: torch's count, one per core), each inference worker `--num_torch_threads` (0: 1);
    an OpenMP thread that waits for a time slice stalls every small operation of its process
    (docs/threads.md)."""
    learner = cfg.num_torch_threads or cores
    inference = cfg.num_torch_threads or 1
    workers = cfg.num_policies * cfg.policy_workers_per_policy
    if learner == 1 and inference == 1:  # one thread each never waits for a sibling thread
        return None
    total = num_learners * learner + workers * inference
    if total <= cores:
        return None
    return (
        f"--num_torch_threads={cfg.num_torch_threads}: {num_learners} learner(s) x {learner} + {workers} "
        f"inference worker(s) x {inference} torch threads on {cores} cores, besides the rollout "
        "workers; processes whose threads wait for each other's time slices can run many times "
        "slower. Pass --num_torch_threads=1 (the default) unless docs/threads.md says otherwise."
    )
