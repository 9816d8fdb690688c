"""A many-writer, one-reader queue over a pipe, safe against the SIGKILL of any writer, and of its
reader, at any moment: every queue between the async placement's processes. The learners' queues
of finished blocks (`BlockReady`), which the rollout workers write; the main process's report
queue, which every child writes; the inboxes of the rollout and inference workers (requests,
replies, the main process's `SetRewardShaping`), which a replacement of their reader goes on
reading; the learners' command queues and the evaluator's requests and results. The supervisor
kills and replaces rollout and inference workers when they crash or hang; the system may kill any
process (out of memory).

Why not a faster-fifo queue: its writers take a process-shared mutex around every `put`. A writer
killed inside it (a few microseconds per call, but a kill at a random moment lands there now and
then) leaves the mutex held for ever: the reader's next `get_many` and every other writer's `put`
block for good. The learner then stopped polling, the main process saw it hang, and the run ended
(`tests/integration/test_fault_tolerance.py` caught it once in many runs); on the report queue the
main process itself would block, and the run would hang with no one to notice. A pipe has no lock
in user space: a `write` of at most `PIPE_BUF` bytes (4096 on Linux; POSIX guarantees 512) is
atomic, so a killed writer has written a whole frame or none, and the kernel cleans up whatever
happens to a holder.

Frames: a 4-byte little-endian length, then a kind byte and the payload, in one `write` each.
A queue made with a `codec` (the hot messages' queues: `surge.runtime.messages.StructCodec`) sends
each message the codec packs as one frame of its bytes (`S`), read back by the same codec: a few
hundred nanoseconds where pickling a tuple of ints and loading it cost a microsecond. A message
the codec does not pack (another type on the same queue), and every message of a queue without
one, is pickled: a message that pickles (plain `pickle`, highest protocol) small enough goes as one frame (`W`);
a larger one (an exception's traceback, a second's worth of episodes) as parts (`P`), each frame
tagged with its writer's random 8-byte id (not the pid, which the system reuses), the message's
number and the part's index and count. Frames of different writers interleave; the reader keeps
each writer's parts until the last one arrives. A writer killed between two parts leaves an
incomplete message, which is never delivered (the reader holds its parts, a few KiB, until it
closes). Messages of one writer arrive in the order it put them.

Writes wait (in `poll`, not in the kernel's write) while the pipe is full, up to `put`'s timeout:
the write end is non-blocking for every process that holds it (its open file description is
shared), so a full pipe is seen and waited on, not slept in for ever.

A reader killed at any moment loses what it had read and not handled (as with any queue), never
half a frame: it reads with a buffer as large as the pipe, and a pipe's `read` returns every byte
it holds up to the buffer's size, so each read takes whole frames only. Its replacement starts at
a frame's first byte; a message of several parts whose first parts the killed reader took is
dropped. No reader waits on anything shared but the pipe itself (a faster-fifo reader killed in
its condition-variable wait made every later `put` block in glibc).
"""

from __future__ import annotations

import collections
import fcntl
import itertools
import os
import pickle
import select
import struct
import time
from queue import Empty, Full
from typing import Any, Protocol

#: the largest frame one `write` may carry and stay atomic
MAX_FRAME_BYTES = select.PIPE_BUF
_LEN = 4
_WHOLE, _PART, _CODED = b"W", b"P", b"S"
_PART_HEADER = struct.Struct("<8sIII")  # writer id, message number, part index, part count
#: payload bytes per part frame
PART_BYTES = MAX_FRAME_BYTES - _LEN - 1 - _PART_HEADER.size


class Codec(Protocol):
    """Packs a queue's hot messages without pickle (`surge.runtime.messages.StructCodec`)."""

    def encode(self, msg: Any) -> bytes | None:
        """`msg`'s bytes, or None when this codec does not pack it (it is pickled instead)."""
        ...

    def decode(self, frame: bytes) -> Any:
        """The message of a frame's body `frame` (its kind byte first, then `encode`'s bytes)."""
        ...


class PipeQueue:
    """See the module docstring. Made in the main process and handed to children when they are
    spawned (multiprocessing's `Connection` objects carry the pipe's descriptors).

    Args:
        capacity_bytes: the pipe's buffer, when the system allows it (Linux `F_SETPIPE_SZ`, up to
            `/proc/sys/fs/pipe-max-size`, 1 MiB by default); None keeps the system's (64 KiB).
            The buffer is what writers can put while the reader is busy before they wait.
        codec: packs the queue's hot messages (see the module docstring); None pickles them all.
    """

    def __init__(self, capacity_bytes: int | None = None, codec: Codec | None = None) -> None:
        from multiprocessing import get_context

        self._r, self._w = get_context("spawn").Pipe(duplex=False)
        # an open file description's O_NONBLOCK is shared with every child: neither end blocks in
        # the kernel; the reader waits in poll for data, a writer for room
        os.set_blocking(self._r.fileno(), False)
        os.set_blocking(self._w.fileno(), False)
        if capacity_bytes is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
            try:
                fcntl.fcntl(self._w.fileno(), fcntl.F_SETPIPE_SZ, capacity_bytes)
            except OSError:  # above pipe-max-size, or the user's pipe quota is spent: the default
                pass
        self._codec = codec
        self.__setstate__(self.__dict__)

    def __getstate__(self) -> dict[str, Any]:
        return {"_r": self._r, "_w": self._w, "_codec": self._codec}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._rfd, self._wfd = self._r.fileno(), self._w.fileno()  # this process's numbers
        self._poller: Any = None
        self._pending = b""  # bytes read after the last whole frame (none: reads take whole frames)
        # a buffer as large as the pipe: each read takes whole frames (module docstring)
        size = fcntl.fcntl(self._rfd, fcntl.F_GETPIPE_SZ) if hasattr(fcntl, "F_GETPIPE_SZ") else 0
        self._read_size = max(65536, size or 1 << 20)
        self._parts: dict[tuple[bytes, int], list[bytes]] = {}  # incomplete messages' parts so far
        self._ready: collections.deque[Any] = collections.deque()  # read, not yet returned by `get`
        self._writer: tuple[int, bytes] | None = None  # (pid, random id) of this process's parts
        self._numbers = itertools.count()

    def put(self, msg: Any, block: bool = True, timeout: float | None = None) -> None:
        """Appends `msg`: one atomic write, or several parts when it is larger than a frame. Waits
        while the pipe is full: for ever by default, up to `timeout` seconds, or not at all with
        `block=False`.

        Raises:
            queue.Full: no room in time. A message of several parts may then have sent some,
                which the reader never delivers.
        """
        deadline = None if not block or timeout is None else time.monotonic() + timeout
        codec = self._codec
        if codec is not None:
            coded = codec.encode(msg)
            if coded is not None:
                self._write(len(coded) + 1, _CODED + coded, block, deadline)
                return
        data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        if _LEN + 1 + len(data) <= MAX_FRAME_BYTES:
            self._write(len(data) + 1, _WHOLE + data, block, deadline)
            return
        if self._writer is None or self._writer[0] != os.getpid():  # also in a forked child
            self._writer = (os.getpid(), os.urandom(8))
        writer, number = self._writer[1], next(self._numbers) % 2**32
        count = -(-len(data) // PART_BYTES)
        for i in range(count):
            chunk = data[i * PART_BYTES : (i + 1) * PART_BYTES]
            body = _PART + _PART_HEADER.pack(writer, number, i, count) + chunk
            self._write(len(body), body, block, deadline)

    def _write(self, n: int, body: bytes, block: bool, deadline: float | None) -> None:
        frame = n.to_bytes(_LEN, "little") + body
        while True:
            try:
                os.write(self._wfd, frame)  # <= PIPE_BUF bytes: all or nothing, never a part
                return
            except BlockingIOError:  # not room for the whole frame
                pass
            left = None if deadline is None else deadline - time.monotonic()
            if not block or (left is not None and left <= 0):
                raise Full
            poller = select.poll()
            poller.register(self._wfd, select.POLLOUT)
            poller.poll(100.0 if left is None else min(100.0, left * 1000.0))

    def _read_frames(self) -> list[Any]:
        chunks = [self._pending]
        while True:
            try:
                chunk = os.read(self._rfd, self._read_size)
            except BlockingIOError:
                break
            if not chunk:  # every write end closed
                break
            chunks.append(chunk)
        buf = b"".join(chunks)
        out, i, codec = [], 0, self._codec
        while len(buf) - i >= _LEN:
            n = int.from_bytes(buf[i : i + _LEN], "little")
            if len(buf) - i - _LEN < n:
                break
            body = buf[i + _LEN : i + _LEN + n]
            i += _LEN + n
            kind = body[:1]
            if kind == _CODED:
                out.append(codec.decode(body))  # type: ignore[union-attr] # only a codec writes them
                continue
            if kind == _WHOLE:
                out.append(pickle.loads(body[1:]))
                continue
            writer, number, index, count = _PART_HEADER.unpack_from(body, 1)
            key = (writer, number)
            parts = self._parts.get(key)
            if index == 0:  # (a stale entry of the same key: its writer died half-way)
                parts = self._parts[key] = []
            elif parts is None or index != len(parts):  # a killed reader took the first parts
                self._parts.pop(key, None)
                continue
            parts.append(body[1 + _PART_HEADER.size :])
            if len(parts) == count:
                del self._parts[key]
                out.append(pickle.loads(b"".join(parts)))
        self._pending = buf[i:]
        return out

    def get_many(self, block: bool = True, timeout: float = 0.0) -> list[Any]:
        """Every message whose frames have all arrived (in each writer's order), waiting up to
        `timeout` seconds for one when none is there (not at all with `block=False` or
        `timeout <= 0`). One reader only.

        Raises:
            queue.Empty: nothing arrived in time.
        """
        msgs = self._read_frames()
        if self._ready:
            msgs[:0] = self._ready
            self._ready.clear()
        if msgs or not block or timeout <= 0:
            if msgs:
                return msgs
            raise Empty
        if self._poller is None:
            self._poller = select.poll()
            self._poller.register(self._rfd, select.POLLIN)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._poller.poll(left * 1000.0):
                raise Empty
            msgs = self._read_frames()
            if msgs:
                return msgs

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        """The oldest message, waiting for one up to `timeout` seconds (for ever when None; not at
        all with `block=False`); the others read with it wait for the next calls. One reader only.

        Raises:
            queue.Empty: nothing arrived in time.
        """
        while not self._ready:
            wait = 1.0 if timeout is None else timeout
            try:
                self._ready.extend(self.get_many(block=block, timeout=wait))
            except Empty:
                if timeout is not None or not block:
                    raise
        return self._ready.popleft()
