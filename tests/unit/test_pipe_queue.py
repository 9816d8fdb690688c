"""surge.runtime.pipe_queue: the learner's queue of finished blocks. Messages arrive whole and in
order from several writer processes, and a writer SIGKILLed at random moments in the middle of
its puts never blocks the reader or the other writers (a faster-fifo queue's writer killed
inside its mutex blocked both for good)."""

import os
import pickle
import random
import signal
import threading
import time
from multiprocessing import get_context
from queue import Empty

import pytest

from surge.runtime.messages import BlockReady, block_ready_messages
from surge.runtime.pipe_queue import MAX_FRAME_BYTES, PipeQueue


def _writer(q: PipeQueue, tag: int, n: int) -> None:
    for i in range(n):
        q.put((tag, i, tuple(range(i % 50))))


def _drain(q: PipeQueue, seconds: float) -> list:
    out: list = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            out += q.get_many(timeout=0.05)
        except Empty:
            pass
    return out


def test_messages_of_several_writers_arrive_whole_and_in_each_writers_order():
    q = PipeQueue()
    ctx = get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(q, tag, 3000)) for tag in range(3)]
    for p in procs:
        p.start()
    got: list = []
    deadline = time.monotonic() + 60
    while len(got) < 9000 and time.monotonic() < deadline:
        try:
            got += q.get_many(timeout=0.1)
        except Empty:
            pass
    for p in procs:
        p.join(10)
    assert len(got) == 9000
    for tag in range(3):
        mine = [m for m in got if m[0] == tag]
        assert mine == [(tag, i, tuple(range(i % 50))) for i in range(3000)]


def test_an_empty_queue_raises_empty_without_and_after_waiting():
    q = PipeQueue()
    with pytest.raises(Empty):
        q.get_many(block=False)
    t0 = time.monotonic()
    with pytest.raises(Empty):
        q.get_many(timeout=0.2)
    assert 0.15 < time.monotonic() - t0 < 2.0
    q.put(("x", 1))
    assert q.get_many(block=False) == [("x", 1)]


def test_a_message_too_large_for_one_atomic_write_is_refused():
    q = PipeQueue()
    big = tuple(range(2000))
    assert len(pickle.dumps(big, protocol=pickle.HIGHEST_PROTOCOL)) > MAX_FRAME_BYTES
    with pytest.raises(ValueError, match="atomic write"):
        q.put(big)
    q.put((1, None))  # the queue is still usable
    assert q.get_many(block=False) == [(1, None)]


@pytest.mark.slow  # 25 writers spawned and killed: about 18 s
def test_writers_killed_at_random_moments_never_block_the_reader_or_the_next_writer():
    q = PipeQueue()
    ctx = get_context("spawn")
    rng = random.Random(0)
    result: dict = {}

    def run() -> None:
        for k in range(25):
            p = ctx.Process(target=_writer, args=(q, k, 10**9))
            p.start()
            # the writer is putting by now (spawn takes longer than this on a loaded machine too)
            _drain(q, rng.uniform(0.3, 0.6))
            os.kill(p.pid, signal.SIGKILL)
            p.join(10)
            got = _drain(q, 0.2)  # what the killed writer wrote whole, and nothing broken
            assert all(m[0] == k for m in got)
            result.setdefault("received", 0)
            result["received"] += len(got)
        q.put(("after", 0))
        result["last"] = _drain(q, 0.5)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "the reader blocked after a writer was killed"
    assert result["last"] == [("after", 0)]
    assert result["received"] > 0


def test_a_large_hand_over_goes_as_parts_that_each_fit_one_atomic_write():
    # a block of 5000 scattered slots of one policy (several policies, big batched envs)
    slots = tuple(range(2**31 - 10_000, 2**31, 2))
    msgs = block_ready_messages(7, slots)
    assert len(msgs) > 1
    assert all(m[0] == 7 for m in msgs)
    assert tuple(s for m in msgs for s in m[1]) == slots  # in order, none lost or repeated
    q = PipeQueue()
    for m in msgs:
        q.put(m)  # each one fits: no ValueError
    assert [BlockReady._make(m) for m in q.get_many(block=False)] == [BlockReady._make(m) for m in msgs]
    assert block_ready_messages(3, None) == [(3, None)]
    assert block_ready_messages(3, (5, 6)) == [(3, (5, 6))]
