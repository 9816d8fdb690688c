"""Config fields: `param` declares one (default, help text, choices, range), and the ranges of
numeric fields declared with it (`param(..., low=, high=)`) generate their checks and messages
(`check_ranges`) instead of being written by hand for each flag.

A range is one of three kinds, told apart by what it declares:

- a count: `low` alone on an `int` field without `why`: an integer (not a bool) >= low;
- a bound with a reason: `low` and `why`: the value >= low, the message saying why;
- an interval: `low` and `high` (with `unit`, `example`): low <= value <= high.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

from surge.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """The values a numeric field accepts.

    Attributes:
        low: the least value accepted (inclusive).
        high: the most (inclusive); None for no bound above.
        count: the value must be an integer (a bool is refused), as sizes and counts are.
        why: what a value below `low` would do, said in the message.
        unit: the quantity of an interval, said in the message ("time in seconds").
        example: a value the fix suggests ("120").
    """

    low: float
    high: float | None = None
    count: bool = False
    why: str = ""
    unit: str = ""
    example: str = ""

    def error(self, name: str, value: Any) -> ConfigError | None:
        """The `ConfigError` on `--name` for `value` outside this range, None for a value inside."""
        if self.count:
            if isinstance(value, int) and not isinstance(value, bool) and value >= self.low:
                return None
            kind = "a positive integer" if self.low == 1 else f"an integer >= {self.low}"
            return ConfigError(
                name, f"must be {kind}, got {value!r}.", f"pass --{name}=N with N >= {self.low}."
            )
        if self.high is not None:
            if self.low <= value <= self.high:
                return None
            return ConfigError(
                name,
                f"a {self.unit} in [{self.low}, {self.high:.3g}], got {value}.",
                f"pass --{name} between {self.low} and {self.high:.3g}"
                + (f", e.g. {self.example}." if self.example else "."),
            )
        if value >= self.low:
            return None
        reason = f" ({self.why})" if self.why else ""
        return ConfigError(
            name, f"must be >= {self.low}, got {value}{reason}.", f"pass --{name} >= {self.low}."
        )


def param(
    default: Any,
    help: str,
    choices: tuple | None = None,
    item_type: type = int,
    *,
    low: float | None = None,
    high: float | None = None,
    why: str = "",
    unit: str = "",
    example: str = "",
) -> Any:
    """A config field with its one-line help text, optional allowed values and, for lists, the
    type of their items (`--flag 1 2 3`). `low` (with `high`, `why`, `unit`, `example`) declares the
    field's range, whose check and message are generated (`Range`): an `int`
    default with `low` alone is a count (an integer >= low)."""
    meta: dict[str, Any] = {"help": help, "item_type": item_type}
    if choices is not None:
        meta["choices"] = choices
    if low is not None:
        count = isinstance(default, int) and not isinstance(default, bool) and high is None and not why
        meta["range"] = Range(low, high, count, why, unit, example)
    if isinstance(default, (list, dict)):
        return field(default_factory=functools.partial(copy.copy, default), metadata=meta)
    return field(default=default, metadata=meta)


def range_of(f: dataclasses.Field) -> Range | None:
    """The `Range` declared on field `f` (`param(..., low=)`), None for a field without one."""
    return f.metadata.get("range")


@functools.cache
def _ranged(fields: tuple[dataclasses.Field, ...], count: bool) -> tuple[tuple[str, Range], ...]:
    return tuple((f.name, r) for f in fields if (r := range_of(f)) is not None and r.count == count)


def check_ranges(values: object, fields: tuple[dataclasses.Field, ...], count: bool) -> None:
    """Checks every field of `fields` that declares a range, in their declaration order: the counts
    (`count=True`) or the other ranges (`count=False`), which the preflight checks at two points.
    `values` holds the fields' values as attributes: the `Config` for its core fields, or any object
    with those attributes (a section dataclass of `fields`).

    Raises:
        ConfigError: on the first field out of its range, with the generated message.
    """
    for name, r in _ranged(fields, count):
        e = r.error(name, getattr(values, name))
        if e is not None:
            raise e
