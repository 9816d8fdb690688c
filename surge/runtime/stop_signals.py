"""The stop rule of `surge train` and `surge enjoy` under SIGINT (Ctrl+C) and SIGTERM
(docs/reliability.md, "Stopping").

- The first SIGINT or SIGTERM asks for a clean stop: `surge train` saves the final checkpoint (the
  learners' real optimizer state) and exits; `surge enjoy` sums up the finished episodes.
- Another SIGINT or SIGTERM within `SAME_STOP_SEC` of the first is the same stop, not an abort:
  GNU `timeout` sends its signal to its child and then to the whole process group (the main process
  receives it twice, microseconds apart), and an operator's `kill -TERM -- -PGID` repeated at once
  or a scheduler that signals both the job step and its processes do the same.
- One later than that is a deliberate abort (a second Ctrl+C after the "again to abort" line):
  `surge train` stops at once, without the final checkpoint (the latest one stays).
- Exit status of a stop on request: 128 + the first signal's number, the shell's convention: 130
  for SIGINT, 143 for SIGTERM (an abort: 128 + the aborting signal). A caller (a script's `&&`,
  a scheduler, `surge.runner`) so tells a run that stopped early, resumable, from one that
  finished (0); that everything was saved is what the run's log says, and a final checkpoint that
  could not be written makes it 1 (failed) whatever the signal.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

#: seconds after the first stop signal in which another one is the same stop (GNU `timeout`'s two
#: signals arrive microseconds apart; a person who reads "again to abort" and presses Ctrl+C takes
#: longer than this)
SAME_STOP_SEC = 2.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_status(signum: int) -> int:
    """The exit status of a process stopped on request by signal `signum`: 128 + `signum`
    (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + int(signum)


class StopAborted(KeyboardInterrupt):
    """Raised in the main thread by a stop signal that aborts (see the module docstring); a
    KeyboardInterrupt, so that no `except Exception` swallows it. `signum`: the aborting signal."""

    def __init__(self, signum: int):
        super().__init__(f"aborted by signal {signum}")
        self.signum = int(signum)


class StopRequests:
    """The stop signals a process received, and what each one means (`note`).

    `first_signal` is the signal of the first stop request (None before any); `requested` says
    whether there was one."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self.first_signal: int | None = None
        self._first_at = 0.0

    @property
    def requested(self) -> bool:
        return self.first_signal is not None

    def note(self, signum: int) -> str:
        """Records signal `signum`; returns "stop" (the first), "same" (another within
        `SAME_STOP_SEC` of the first: the same stop) or "abort" (a later one)."""
        now = self._clock()
        if self.first_signal is None:
            self.first_signal, self._first_at = int(signum), now
            return "stop"
        return "same" if now - self._first_at < SAME_STOP_SEC else "abort"

    def exit_status(self) -> int:
        """`exit_status` of the first stop signal; 0 when there was none."""
        return 0 if self.first_signal is None else exit_status(self.first_signal)
