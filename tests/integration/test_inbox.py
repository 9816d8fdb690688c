"""An inbox whose reader is killed while it waits still takes messages, and a new reader gets
them: the property that lets the async placement replace a killed rollout or inference worker.
The same test on a plain faster-fifo queue hangs (a `put` after a waiter was killed blocks in
glibc's condition variable); it is not run here, as it would leave a hung thread behind."""

import multiprocessing as mp
import os
import signal
import threading
import time

from surge.runtime.inbox import Inbox


def _reader(inbox: Inbox, ready) -> None:
    ready.set()
    while True:
        try:
            inbox.get_many(timeout=10.0)
        except Exception:  # noqa: BLE001 - Empty: wait again
            pass


def test_a_reader_killed_while_waiting_leaves_the_inbox_usable():
    ctx = mp.get_context("spawn")
    inbox = Inbox(100_000)
    for round_ in range(5):  # a killed waiter is only sometimes harmful to a condition variable
        ready = ctx.Event()
        reader = ctx.Process(target=_reader, args=(inbox, ready), daemon=True)
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
        got = []
        while len(got) < 100:
            got += inbox.get_many(timeout=1.0)
        assert got == [(round_, i) for i in range(100)]


def test_a_waiting_reader_wakes_when_a_message_arrives():
    inbox = Inbox(10_000)
    threading.Timer(0.2, lambda: inbox.put("hello")).start()
    t0 = time.monotonic()
    assert inbox.get_many(timeout=5.0) == ["hello"]
    assert time.monotonic() - t0 < 2.0
