"""The processes a run started, read from /proc (Linux): the descendants of its main process.

surge's children are the main process's grandchildren where multiprocessing's fork server starts
them (`surge.runtime.child_start.process_context`): their parent is the server, itself a child of
the main process. Tests that look for a run's processes look at every descendant."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path


def stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat fields after the command name (state first, parent pid second), None for a
    gone process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> list[int]:
    """Living (not zombie) descendants of `pid`: its children, theirs, and so on."""
    children: defaultdict[int, list[int]] = defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit() and (st := stat(int(d))) and st[0] != "Z":
            children[int(st[1])].append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), ()):
            out.append(c)
            todo.append(c)
    return out


def cmdline(pid: int) -> str:
    """The process's command line, arguments joined by spaces ("" for a gone process); a surge child
    shows its title there (`surge:<role>`, setproctitle)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""
