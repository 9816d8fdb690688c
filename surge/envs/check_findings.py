"""`Findings`: the warnings of one `check_env`, each distinct problem once, with how often it was seen.

The check steps an env 50 times (and again through surge's multi-agent wrapper), so a problem of
every observation would otherwise be reported once per step; gymnasium's own checker warns of some
of the same problems in its words. Here a problem is kept once, with its count and the first call
that showed it, and gymnasium's warnings of a problem surge's check already named are dropped.
"""

from __future__ import annotations

import re

#: kinds of problems that gymnasium's passive checker also warns of
OUT_OF_BOUNDS = "out_of_bounds"
NOT_AN_ARRAY = "not_an_array"

# gymnasium's warning texts (gymnasium.utils.passive_env_checker, Box.contains) for those kinds
_GYMNASIUM_TEXTS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"not within the observation space"), OUT_OF_BOUNDS),
    (re.compile(r"expecting a numpy array|Casting input x to numpy array"), NOT_AN_ARRAY),
)


class Findings:
    """Problems that do not stop training, in the order first seen, each with a count.

    `append(text)` keeps a problem that has no location; `add(problem, where, kind)` one seen at a
    call (`where`, e.g. "env.step() (step 3)"), counted each time the same `problem` text recurs.
    """

    def __init__(self) -> None:
        self._seen: dict[str, list] = {}  # problem -> [times seen, first where]
        self._kinds: set[str] = set()

    def append(self, problem: str) -> None:
        self.add(problem)

    def add(self, problem: str, where: str | None = None, kind: str | None = None) -> None:
        entry = self._seen.setdefault(problem, [0, where])
        entry[0] += 1
        if kind:
            self._kinds.add(kind)

    def already_named(self, gymnasium_text: str) -> bool:
        """True when `gymnasium_text` (a warning or error of gymnasium's checker) is a problem of a
        kind this check has already named with its fix."""
        return any(p.search(gymnasium_text) and kind in self._kinds for p, kind in _GYMNASIUM_TEXTS)

    def lines(self) -> list[str]:
        """One sentence per distinct problem: `problem (at WHERE)`, or `problem (seen N times,
        first at WHERE)` for one seen more than once."""
        out = []
        for problem, (count, where) in self._seen.items():
            if where is None:
                out.append(problem if count == 1 else f"{problem} (seen {count} times)")
            elif count == 1:
                out.append(f"{problem} (at {where})")
            else:
                out.append(f"{problem} (seen {count} times, first at {where})")
        return out


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def clean_gymnasium_text(message: str) -> str:
    """`message` (a warning or error of gymnasium's checker) without its colour codes and `WARN: `."""
    message = _ANSI.sub("", str(message)).strip()
    return message[len("WARN: ") :] if message.startswith("WARN: ") else message
