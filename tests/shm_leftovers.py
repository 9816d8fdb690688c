"""Shared memory a test run may leave behind: the /dev/shm entries now, and those some live
process still holds (another program's), so that a new entry nobody holds is a leftover."""

from __future__ import annotations

import os
import time
from pathlib import Path


def shm_entries() -> set[str]:
    """Names in /dev/shm (empty where there is no /dev/shm)."""
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def held_shm_entries() -> set[str]:
    """/dev/shm entries some live process has open or mapped (read from /proc).

    Matched by inode as well as by name: glibc's `sem_open` creates a semaphore under a temporary
    name (`sem.XXXXXX`), maps it, then links it to its real name and unlinks the temporary one, so
    the creating process's maps show the temporary name, "(deleted)", with the real one's inode."""
    held, inodes = set(), set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for line in (proc / "maps").read_text().splitlines():
                if "/dev/shm/" in line:
                    held.add(line.split("/dev/shm/", 1)[1].split(" ")[0])
                    inodes.add(int(line.split()[4]))
            for fd in (proc / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("/dev/shm/"):
                    held.add(target[len("/dev/shm/") :].split(" ")[0])
        except (OSError, ValueError, IndexError):
            continue
    for name in shm_entries():
        try:
            if os.stat(f"/dev/shm/{name}").st_ino in inodes:
                held.add(name)
        except OSError:
            continue
    return held


def shm_left_since(before: set[str], wait_s: float = 10.0, poll_s: float = 0.5) -> set[str]:
    """The /dev/shm entries made since `before` that are still there after up to `wait_s` seconds
    and that no live process holds. Other programs' entries (a test beside this one under
    pytest-xdist, the machine's own) are held by a live process or go soon; a stopped run's own
    leftovers stay, so they are returned."""
    new = shm_entries() - before
    deadline = time.time() + wait_s
    while new and time.time() < deadline:
        time.sleep(poll_s)
        new = (new & shm_entries()) - held_shm_entries()
    return new
