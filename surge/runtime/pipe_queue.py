"""A many-writer, one-reader queue of small messages over a pipe, safe against the SIGKILL of any
writer at any moment: the learner's queue of finished blocks (`BlockReady`), which the rollout
workers write and the supervisor kills and replaces when they crash or hang.

Why not a faster-fifo queue: its writers take a process-shared mutex around every `put`. A writer
killed inside it (a few microseconds per call, but a kill at a random moment lands there now and
then) leaves the mutex held for ever: the reader's next `get_many` and every other writer's `put`
block for good. The learner then stopped polling, the main process saw it hang, and the run ended
(`tests/integration/test_fault_tolerance.py` caught it once in many runs). A pipe has no lock in
user space: a `write` of at most `PIPE_BUF` bytes (4096 on Linux; POSIX guarantees 512) is atomic,
so a killed writer has written a whole message or none, and the kernel cleans up whatever happens
to a holder.

Each message is pickled (plain `pickle`, highest protocol: the messages are tuples of numbers) and
framed with its length (4 bytes, little-endian) in one `write`; a message too large for one atomic
write is refused. Writes block while the pipe is full (64 KiB by default); the learner's
back-pressure (the block pool) bounds the messages in flight to a few hundred bytes each per block.
"""

from __future__ import annotations

import os
import pickle
import select
import time
from queue import Empty
from typing import Any

#: the largest frame (length prefix + pickle) one `write` may carry and stay atomic
MAX_FRAME_BYTES = select.PIPE_BUF
_LEN = 4


class PipeQueue:
    """See the module docstring. Made in the main process and handed to children when they are
    spawned (multiprocessing's `Connection` objects carry the pipe's descriptors)."""

    def __init__(self) -> None:
        from multiprocessing import get_context

        self._r, self._w = get_context("spawn").Pipe(duplex=False)
        # an open file description's O_NONBLOCK is shared with every child: the read end never
        # blocks (the reader waits in poll), the write end blocks while the pipe is full
        os.set_blocking(self._r.fileno(), False)
        os.set_blocking(self._w.fileno(), True)
        self.__setstate__(self.__dict__)

    def __getstate__(self) -> dict[str, Any]:
        return {"_r": self._r, "_w": self._w}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._rfd, self._wfd = self._r.fileno(), self._w.fileno()  # this process's numbers
        self._poller: Any = None
        self._pending = b""  # bytes read after the last whole frame

    def put(self, msg: Any) -> None:
        """Appends `msg` in one atomic write; blocks while the pipe is full.

        Raises:
            ValueError: the pickled message and its length prefix exceed `MAX_FRAME_BYTES`.
        """
        data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        frame = len(data).to_bytes(_LEN, "little") + data
        if len(frame) > MAX_FRAME_BYTES:
            raise ValueError(
                f"a PipeQueue message must pickle to at most {MAX_FRAME_BYTES - _LEN} bytes for an "
                f"atomic write; this one is {len(data)}"
            )
        os.write(self._wfd, frame)  # a pipe write of <= PIPE_BUF bytes is all or nothing

    def _read_frames(self) -> list[Any]:
        chunks = [self._pending]
        while True:
            try:
                chunk = os.read(self._rfd, 65536)
            except BlockingIOError:
                break
            if not chunk:  # every write end closed
                break
            chunks.append(chunk)
        buf = b"".join(chunks)
        out, i = [], 0
        while len(buf) - i >= _LEN:
            n = int.from_bytes(buf[i : i + _LEN], "little")
            if len(buf) - i - _LEN < n:
                break
            out.append(pickle.loads(buf[i + _LEN : i + _LEN + n]))
            i += _LEN + n
        self._pending = buf[i:]
        return out

    def get_many(self, block: bool = True, timeout: float = 0.0) -> list[Any]:
        """Every message written so far (oldest first), waiting up to `timeout` seconds for one
        when none is there (not at all with `block=False` or `timeout <= 0`). One reader only.

        Raises:
            queue.Empty: nothing arrived in time.
        """
        msgs = self._read_frames()
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
