"""`StopFlag`: a set in one process is seen by another (spawned, as the async placement's
children are), `wait` returns at the set or after its timeout, and it makes no named semaphore."""

import os
import time

import torch.multiprocessing as tmp

from surge.runtime.stop_flag import StopFlag


def _set_after(flag: StopFlag, delay: float) -> None:
    time.sleep(delay)
    flag.set()


def _sem_names() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith("sem.")} if os.path.isdir("/dev/shm") else set()


def test_a_spawned_child_sets_the_flag_and_wait_returns_then():
    before = _sem_names()
    flag = StopFlag()
    assert _sem_names() == before
    assert not flag.is_set()
    t0 = time.monotonic()
    assert flag.wait(0.2) is False
    assert 0.2 <= time.monotonic() - t0 < 1.0
    child = tmp.get_context("spawn").Process(target=_set_after, args=(flag, 0.5))
    child.start()
    try:
        assert flag.wait(60.0) is True  # returns at the set, not after 60 s
        assert flag.is_set()
    finally:
        child.join(30)
    assert child.exitcode == 0
    t0 = time.monotonic()
    assert flag.wait(10.0) is True and time.monotonic() - t0 < 0.1  # already set: at once
