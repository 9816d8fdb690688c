"""`RepeatedErrors`: tells a child's error that recurs identically from one seen for the first time.

A worker that crashes is replaced (`surge.runtime.async_placement`). When its replacement, or
another worker, fails with the very same exception, replacing it again only repeats the traceback:
in a worker's first reset that ends the run (the env fails deterministically, e.g. a missing level
file), and later in the run the repeat is logged in one line, its traceback being above already.
"""

from __future__ import annotations


def exception_text(traceback_text: str) -> str:
    """The exception part of a formatted traceback (`RuntimeError: level file not found`): its
    lines after the last stack frame, stripped; the whole text, stripped, if it has no frame."""
    lines = traceback_text.rstrip().splitlines()
    tail: list[str] = []
    for line in reversed(lines):
        if line.startswith((" ", "\t")):  # a frame ("  File ...") or its source line
            break
        tail.append(line)
    return "\n".join(reversed(tail)).strip() or traceback_text.strip()


class RepeatedErrors:
    """The children's errors seen so far, by their exception text (not by child: a deterministic
    fault of the env fails every worker the same way)."""

    def __init__(self) -> None:
        self._first: dict[str, str] = {}  # exception text -> name of the child that raised it first

    def first_raised_by(self, name: str, traceback_text: str) -> str | None:
        """Records the error of child `name`; returns the name of the child that raised the same
        exception before (it may be `name` itself, an earlier process of the same worker), or None
        when it is new."""
        key = exception_text(traceback_text)
        first = self._first.get(key)
        if first is None:
            self._first[key] = name
        return first
