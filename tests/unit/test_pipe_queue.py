"""surge.runtime.pipe_queue: the learners' queues of finished blocks and the report queue. Messages
arrive whole and in order from several writer processes, also those larger than one atomic write
(as parts), and a writer SIGKILLed at random moments in the middle of its puts never blocks the
reader or the other writers (a faster-fifo queue's writer killed inside its mutex blocked both
for good), nor delivers half a message."""

import fcntl
import os
import pickle
import random
import signal
import threading
import time
from multiprocessing import get_context
from queue import Empty, Full

import pytest

from surge.runtime.messages import BlockReady
from surge.runtime.pipe_queue import MAX_FRAME_BYTES, PART_BYTES, PipeQueue


def _message(tag: int, i: int) -> tuple:
    """Every 7th message pickles to several frames (about 15 KiB), the others to one."""
    return (tag, i, tuple(range(i % 50 if i % 7 else 3000 + i % 5)))


def _writer(q: PipeQueue, tag: int, n: int) -> None:
    for i in range(n):
        q.put(_message(tag, i))


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
        assert mine == [_message(tag, i) for i in range(3000)]


def _raises_empty_at_once_and_after_its_timeout(get) -> None:
    """`get` (a queue's `get_many` or `get`) raises Empty without waiting, then after 0.2 s."""
    with pytest.raises(Empty):
        get(block=False)
    t0 = time.monotonic()
    with pytest.raises(Empty):
        get(timeout=0.2)
    assert 0.15 < time.monotonic() - t0 < 2.0


def test_an_empty_queue_raises_empty_without_and_after_waiting():
    q = PipeQueue()
    _raises_empty_at_once_and_after_its_timeout(q.get_many)
    q.put(("x", 1))
    assert q.get_many(block=False) == [("x", 1)]


def test_a_message_larger_than_the_pipe_arrives_whole_as_parts():
    q = PipeQueue()
    big = {"traceback": "x" * 3_000_000, "numbers": tuple(range(2000))}
    assert len(pickle.dumps(big, protocol=pickle.HIGHEST_PROTOCOL)) > 40 * MAX_FRAME_BYTES
    got: list = []
    reader = threading.Thread(target=lambda: got.extend(_drain(q, 3.0)), daemon=True)
    reader.start()  # the parts fill the pipe: the writer waits for room as the reader reads
    q.put(("before",))
    q.put(big)
    q.put(("after",))
    reader.join(10)
    assert got == [("before",), big, ("after",)]


def test_a_writer_that_dies_between_parts_never_delivers_half_a_message():
    q = PipeQueue()
    writes: list = []
    real_write = q._write

    def dies_after_two_parts(n, body, block, deadline):
        if len(writes) == 2:
            raise SystemExit  # the writer's death, after two atomic writes of the message's parts
        writes.append(n)
        real_write(n, body, block, deadline)

    q._write = dies_after_two_parts  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        q.put(tuple(range(5000)))  # about 5 parts
    assert _drain(q, 0.1) == []
    q._write = real_write  # type: ignore[method-assign]
    q.put(("next", 1))  # the same writer's next message: whole, the half one never
    q.put(tuple(range(3000)))
    assert _drain(q, 0.2) == [("next", 1), tuple(range(3000))]
    # a later writer whose id and message number recur (as after a restart) starts afresh
    with pytest.raises(SystemExit):
        q._write = dies_after_two_parts  # type: ignore[method-assign]
        writes.clear()
        q.put(tuple(range(5000)))
    q._write = real_write  # type: ignore[method-assign]
    q._numbers = iter(range(2, 10))  # the dead message's number again
    q.put(tuple(range(4000)))
    assert _drain(q, 0.2) == [tuple(range(4000))]


def test_get_returns_the_oldest_and_keeps_the_rest_for_the_next_calls():
    q = PipeQueue()
    for i in range(3):
        q.put(i)
    assert q.get() == 0
    q.put(3)
    assert q.get(block=False) == 1
    assert q.get_many(block=False) == [2, 3]  # what `get` had read comes first, in order
    _raises_empty_at_once_and_after_its_timeout(q.get)
    threading.Timer(1.3, lambda: q.put("late")).start()
    assert q.get() == "late"  # no timeout: waits past get_many's one-second slices


def test_put_waits_for_room_up_to_its_timeout_then_raises_full():
    q = PipeQueue()
    small = ("x" * 3000,)
    n = 0
    with pytest.raises(Full):
        while True:
            q.put(small, block=False)  # no reader: the pipe fills
            n += 1
    assert n > 0
    t0 = time.monotonic()
    with pytest.raises(Full):
        q.put(small, timeout=0.3)
    assert 0.25 < time.monotonic() - t0 < 3.0
    assert len(q.get_many(block=False)) == n  # the reader gets every whole message put
    q.put(small, timeout=0.3)  # room again
    assert q.get_many(block=False) == [small]


def test_one_read_of_a_full_pipe_takes_whole_frames_only():
    """What makes a reader's SIGKILL harmless to its replacement: a reader's one `read` takes every
    byte the pipe holds, which are whole frames, so a kill between two reads leaves no half frame."""
    for capacity in (None, 1 << 20):
        q = PipeQueue(capacity_bytes=capacity)
        i = 0
        with pytest.raises(Full):
            while True:  # one-frame messages and messages in parts, until the pipe is full
                q.put((i, "x" * (100 if i % 3 else 6000)), block=False)
                i += 1
        data = os.read(q._rfd, q._read_size)
        end = 0
        while end < len(data):
            end += 4 + int.from_bytes(data[end : end + 4], "little")
        assert end == len(data) > 20_000  # (pages half filled by a small frame hold no large one)
        with pytest.raises(BlockingIOError):
            os.read(q._rfd, 1)  # nothing left behind


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="Linux pipes only")
def test_the_report_queues_capacity_is_set_when_the_system_allows_it():
    q = PipeQueue(capacity_bytes=1 << 20)
    with open("/proc/sys/fs/pipe-max-size") as f:
        allowed = int(f.read())
    size = fcntl.fcntl(q._wfd, fcntl.F_GETPIPE_SZ)
    assert size >= min(1 << 20, allowed)
    assert fcntl.fcntl(PipeQueue(capacity_bytes=10**12)._wfd, fcntl.F_GETPIPE_SZ) > 0  # refused: default


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
            got = _drain(q, rng.uniform(0.3, 0.6))
            os.kill(p.pid, signal.SIGKILL)
            p.join(10)
            got += _drain(q, 0.2)  # what the killed writer wrote whole, and nothing broken
            assert got == [_message(k, i) for i in range(len(got))]  # none half, none lost
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


def test_a_large_hand_over_arrives_whole_as_one_message():
    # a block of 5000 scattered slots of one policy (several policies, big batched envs): parts
    slots = tuple(range(2**31 - 10_000, 2**31, 2))
    msg = tuple(BlockReady(7, slots))
    assert len(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)) > PART_BYTES
    q = PipeQueue()
    q.put(msg)
    q.put(tuple(BlockReady(3, None)))
    got = [BlockReady._make(m) for m in q.get_many(block=False)]
    assert got == [BlockReady(7, slots), BlockReady(3, None)]  # in order, none lost or repeated
