"""The first code a child of the async placement runs: tie its life to its parent's, then
load its context and run its role.

Why a module of its own, importing nothing heavy: a child made with the "spawn" start method
unpickles its target and arguments before running any code of ours, and for a surge role that
means importing torch and rebuilding its shared tensors: seconds of CPU time, tens of seconds on
a loaded machine. A main process killed in that time left the child running to the end of its
imports (at load 8, 4 of 5 children were alive 10 s after the kill). Here the role and its context
travel as one opaque blob (`ChildTask`), unpickled only after `die_with_parent` ran, so the window
in which a dead parent goes unnoticed is the interpreter's own start (tens of ms of CPU).

Rollout and inference workers start from a fork server (`process_context`) where there is one: a
process that imported torch and surge's role modules once, and forks each child from that state,
so a child is running its role in milliseconds instead of importing torch again (about 2 s of CPU
per child here, paid by every worker of every run, replacements included). The fork server is
started before the learners (`start_fork_server`) and lives as long as the main process. Its
children die with it, and their exit status dies with it too (multiprocessing reports 255), so
the processes whose death ends the run, the learners and the evaluator, are spawned by the main
process itself (`direct_context`): a killed fork server then costs only its workers, which the
main process replaces. That costs one torch import per learner at the start (an async CartPole
run's start, to the workers' first reset, took 7.0-7.2 s against 4.5 s on the shared 2-core
machine at load 5; its imports overlap with the server's where a core is free).
What a spawned child took from its parent at its start and a forked one would take from the
server's, the child takes from the parent here: its environment variables (`ChildTask`), and, by
multiprocessing itself, its working directory and `sys.path`.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
from collections.abc import Callable, Sequence
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.reduction import ForkingPickler
from typing import Any

from surge.child_guard import die_with_parent

#: the pid of the main process whose fork server is starting, for the server (`fork_server_init`)
FORK_SERVER_PARENT_ENV = "SURGE_FORK_SERVER_PARENT"

#: imported once by the fork server: the modules of every role a child can run (each imports torch
#: and the rest of what the role needs), so a forked child imports nothing to start
PRELOAD_MODULES = (
    "surge.runtime.fork_server_init",
    "surge.runtime.process_setup",
    "surge.runtime.rollout_process",
    "surge.runtime.inference_process",
    "surge.runtime.learner_process",
)

#: modules a child imports before it runs its role, named by the process that starts it: what
#: registers the plug-ins its config names (the entry points' built-ins, `surge.app.builtins`, add
#: themselves with `import_in_children`). Names, not imports: the registering modules sit above
#: this layer, and a child rebuilds its config from flat values through the registries.
STARTUP_MODULES: list[str] = []


def import_in_children(module: str) -> None:
    """Makes every child started after this call import `module` (a dotted name) before its role:
    the fork server preloads it, a spawned child or a Ray sampler node imports it at its start."""
    if module not in STARTUP_MODULES:
        STARTUP_MODULES.append(module)


def import_startup_modules(modules: list[str] | tuple[str, ...]) -> None:
    """Imports `modules` (`STARTUP_MODULES` as the parent had them) in this child.

    Raises:
        ImportError: a module cannot be imported here.
    """
    for module in modules:
        importlib.import_module(module)


def process_context(preload: Sequence[str] = ()) -> ForkServerContext | SpawnContext:
    """The multiprocessing context surge's async placement starts its children with:
    torch.multiprocessing's "forkserver" context, its server preloading `PRELOAD_MODULES`, where
    the platform has it (Linux, macOS), else "spawn". Both start each child from a clean
    interpreter state, never a copy of the main process's threads and locks ("fork"). `preload`:
    more modules for the server to import (the env family's slow imports, `EnvFamily.preload`); one
    that cannot be imported there is skipped (multiprocessing's server ignores its ImportError) and
    imported by each child that needs it."""
    import torch.multiprocessing as tmp

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return tmp.get_context("spawn")
    os.environ[FORK_SERVER_PARENT_ENV] = str(os.getpid())  # read by the server (fork_server_init)
    ctx = tmp.get_context("forkserver")
    # no effect once the server runs
    ctx.set_forkserver_preload(
        [*PRELOAD_MODULES, *STARTUP_MODULES, *(m for m in preload if m not in STARTUP_MODULES)]
    )
    return ctx


def direct_context() -> SpawnContext:
    """The context of the children that must not depend on the fork server: torch.multiprocessing's
    "spawn" (each child a fresh interpreter, started by this process, and its direct child)."""
    import torch.multiprocessing as tmp

    return tmp.get_context("spawn")


def start_fork_server(ctx: ForkServerContext | SpawnContext) -> int | None:
    """Starts `ctx`'s fork server now (no effect on a spawn context, or when it runs): its imports
    then overlap with whatever this process starts next. Returns the server's pid, or None."""
    if not isinstance(ctx, ForkServerContext):
        return None
    from multiprocessing import forkserver

    forkserver.ensure_running()
    return fork_server_pid()


def fork_server_pid() -> int | None:
    """The pid of the fork server this process started (`process_context`), None before it did."""
    from multiprocessing import forkserver

    server: Any = getattr(forkserver, "_forkserver", None)
    return getattr(server, "_forkserver_pid", None)


def child_exited(pid: int) -> bool:
    """Whether this process's child `pid` (its fork server) exited, without reaping it:
    multiprocessing waits for its fork server itself before it starts the next one. True for a pid
    that is no longer a child of this process (already reaped); False where the platform cannot
    tell (no `os.waitid`)."""
    if not hasattr(os, "waitid"):
        return False
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


class ChildTask:
    """`fn(context)` pickled into bytes when the process is spawned, unpickled only by `run`.

    Pickled (by the spawning `Process.start`) it becomes a `ChildTask` holding the bytes of
    `(fn, context)`, made with multiprocessing's `ForkingPickler` inside the spawn's own pickling,
    so shared tensors, queues and semaphores travel exactly as they would as plain arguments (their
    file descriptors are passed to the child by the same spawn).

    It also carries the parent's environment variables as they are at the start, which a child of
    the fork server takes on in `child_main` (it would otherwise have the server's, as they were
    when the server started), and the parent's `STARTUP_MODULES`, which the child imports before
    it unpickles its role.
    """

    def __init__(self, fn: Callable[[Any], None], context: Any):
        self._fn: Callable[[Any], None] | None = fn
        self._context = context
        self._blob: bytes | None = None
        self.environ: dict[str, str] | None = None
        self.startup_modules: tuple[str, ...] = ()

    def __reduce__(self) -> tuple[Any, ...]:
        blob = bytes(ForkingPickler.dumps((self._fn, self._context)))
        return (ChildTask._from_blob, (blob, dict(os.environ), tuple(STARTUP_MODULES)))

    @classmethod
    def _from_blob(
        cls, blob: bytes, environ: dict[str, str], startup_modules: tuple[str, ...] = ()
    ) -> ChildTask:
        task = cls.__new__(cls)
        task._fn, task._context, task._blob, task.environ = None, None, blob, environ
        task.startup_modules = startup_modules
        return task

    def take_environment(self) -> None:
        """Makes this process's environment variables the parent's at the start (unpickled tasks)."""
        if self.environ is not None and self.environ != os.environ:
            os.environ.clear()
            os.environ.update(self.environ)

    def run(self) -> None:
        """Imports the parent's `STARTUP_MODULES`, unpickles `(fn, context)` (imports `fn`'s
        module) and calls `fn(context)`."""
        import_startup_modules(self.startup_modules)
        if self._blob is not None:
            self._fn, self._context = ForkingPickler.loads(self._blob)
            self._blob = None
        assert self._fn is not None
        self._fn(self._context)


def child_main(task: ChildTask) -> None:
    """Target of every process the async placement spawns: `die_with_parent`, the parent's
    environment variables, then `task.run()`."""
    die_with_parent()
    task.take_environment()
    task.run()
