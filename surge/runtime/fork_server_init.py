"""Imported by multiprocessing's fork server (the first of `child_start.PRELOAD_MODULES`) and by
nothing else: ties the server's life to the surge main process that started it.

The server is a child of the main process; surge's children are the server's (forked from it) and
die when it dies (`PR_SET_PDEATHSIG`, set by each child in `surge.child_guard.die_with_parent`). Left to
itself the server exits once the main process is gone, through a full interpreter shutdown with
torch loaded: 2-4 s at load 8, during which the children kept running. With `PR_SET_PDEATHSIG` on
the server too, the kernel kills it the moment the main process dies, and its children with it,
neither needing to be scheduled to notice.

The server also ignores SIGTERM, as it ignores SIGINT (multiprocessing does that) and as every
child does (`process_setup.setup_child`): GNU `timeout`, Slurm and systemd signal the whole process
group, and a server that died of it took every child with it (the learner before its final
checkpoint); the main process coordinates the stop.

The main process names itself in `FORK_SERVER_PARENT_ENV` before the server starts
(`child_start.process_context`); the check that the server's parent is that process keeps an
unrelated importer from tying itself to its parent. No other module imports this one: a surge main
process started by another (`surge.runner`, `surge.tune`) inherits that variable, naming its own
parent.
"""

from __future__ import annotations

import ctypes
import os
import signal

from surge.child_guard import _PR_SET_PDEATHSIG
from surge.runtime.child_start import FORK_SERVER_PARENT_ENV

if os.environ.get(FORK_SERVER_PARENT_ENV) == str(os.getppid()):
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux/glibc: the server exits on its own, later
        pass
    if os.getppid() != int(os.environ[FORK_SERVER_PARENT_ENV]):  # the parent died before prctl
        os._exit(1)
    # a fork server's child keeps this until `setup_child`, which ignores SIGTERM too
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
