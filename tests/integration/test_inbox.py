"""The rollout and inference workers' inboxes (`surge.runtime.pipe_queue.PipeQueue`): a reader
killed while it waits, or at a random moment while it reads, leaves the inbox usable, and a new
reader gets the later messages whole and in order: the property that lets the async placement
replace a killed rollout or inference worker, which reads on from the same inbox. (A plain
faster-fifo queue hangs in the first case: a `put` after a waiter was killed blocks in glibc's
condition variable; it is not run here, as it would leave a hung thread behind.)"""

import multiprocessing as mp
import os
import random
import signal
import threading
import time
from queue import Empty

from surge.runtime.pipe_queue import PipeQueue


def _reader(inbox: PipeQueue, ready, timeout: float) -> None:
    """Reads for ever, each wait up to `timeout` s (long: mostly waiting; short: mostly reading)."""
    ready.set()
    while True:
        try:
            inbox.get_many(timeout=timeout)
        except Empty:
            pass


def _writer(inbox: PipeQueue, stop) -> None:
    i = 0
    while not stop.is_set():
        # every 5th message in parts (about 10 KiB), the others one frame each
        inbox.put((i, tuple(range(2000 if i % 5 == 0 else i % 40))))
        i += 1


def test_a_reader_killed_while_waiting_leaves_the_inbox_usable():
    ctx = mp.get_context("spawn")
    inbox = PipeQueue()
    for round_ in range(5):
        ready = ctx.Event()
        reader = ctx.Process(target=_reader, args=(inbox, ready, 10.0), daemon=True)
        reader.start()
        assert ready.wait(30)
        time.sleep(0.3)  # the reader now sleeps in its wait
        os.kill(reader.pid, signal.SIGKILL)
        reader.join(10)
        done = threading.Event()

        def put(r=round_, done=done) -> None:
            for i in range(100):
                inbox.put((r, i))
            done.set()

        threading.Thread(target=put, daemon=True).start()
        assert done.wait(10), f"put blocked after the reader was killed (round {round_})"
        got: list = []
        while len(got) < 100:
            got += inbox.get_many(timeout=1.0)
        assert got == [(round_, i) for i in range(100)]


def test_readers_killed_while_reading_leave_whole_messages_in_order_to_the_next():
    """A writer puts without pause while readers, each killed at a random moment of its busy
    reading, follow one another; then this process reads: every message it gets is whole (its
    content matches its number), in order, with the killed readers' share missing."""
    ctx = mp.get_context("spawn")
    inbox = PipeQueue()
    stop = ctx.Event()
    writer = ctx.Process(target=_writer, args=(inbox, stop), daemon=True)
    writer.start()
    rng = random.Random(0)
    try:
        for _ in range(8):
            ready = ctx.Event()
            reader = ctx.Process(target=_reader, args=(inbox, ready, 0.001), daemon=True)
            reader.start()
            assert ready.wait(30)
            time.sleep(rng.uniform(0.05, 0.3))
            os.kill(reader.pid, signal.SIGKILL)
            reader.join(10)
        got: list = []
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                got += inbox.get_many(timeout=0.05)
            except Empty:
                pass
    finally:
        stop.set()
        writer.join(10)
    assert len(got) > 100
    numbers = [m[0] for m in got]
    assert numbers == sorted(set(numbers))  # in order, none twice
    assert all(
        m == (i, tuple(range(2000 if i % 5 == 0 else i % 40))) for i, m in zip(numbers, got, strict=True)
    )


def test_a_waiting_reader_wakes_when_a_message_arrives():
    inbox = PipeQueue()
    threading.Timer(0.2, lambda: inbox.put("hello")).start()
    t0 = time.monotonic()
    assert inbox.get_many(timeout=5.0) == ["hello"]
    assert time.monotonic() - t0 < 2.0
