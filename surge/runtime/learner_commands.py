"""The learner process's command queue, read the same way by every learner loop (the free async
one in `surge.runtime.learner_process` and the fixed-schedule one in
`surge.runtime.lockstep_learner`): commands run in the order they were sent, a final
`SaveCommand` first lets the loop finish what the stop leaves (drop or train its queued work),
and a `StopCommand` ends the loop."""

from __future__ import annotations

from collections.abc import Callable
from queue import Empty
from typing import Any, Protocol

from surge.runtime.messages import SaveCommand, StopCommand


class CommandQueue(Protocol):
    """A learner's command queue (`surge.runtime.pipe_queue.PipeQueue`)."""

    def get_many(self, block: bool = True, timeout: float = 0.0) -> list[Any]:
        """Every waiting item; raises `queue.Empty` when there is none."""
        ...


def run_commands(
    queue: CommandQueue, handle: Callable[[Any], None], before_final: Callable[[], None]
) -> bool:
    """Handles every command waiting on `queue`, without blocking, in order: `handle(cmd)` for each,
    after `before_final()` for a final `SaveCommand`.

    Returns:
        True when a `StopCommand` came (the commands after it are not handled: the learner loop
        returns), False once the queue is drained.
    """
    try:
        for cmd in queue.get_many(block=False):
            if isinstance(cmd, StopCommand):
                return True
            if isinstance(cmd, SaveCommand) and cmd.kind == "final":
                before_final()
            handle(cmd)
    except Empty:
        pass
    return False
