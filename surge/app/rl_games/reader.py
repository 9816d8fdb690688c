"""The reading side of the rl_games YAML translation (`surge.app.rl_games.translation`): a mapping of the
file that records which keys were read (`Node`, so that every unread key can be refused by its
path), the number and boolean readers, and the `Translator` that collects surge's flags, the notes
for the log and the keys that wait for a flag of issue 21 (`Translator.need`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from surge.app.rl_games.envs import RlGamesKeyError
from surge.cfg.config import EvalParams, algo_section_fields, core_fields

#: value used for "no limit" where surge's flag needs a finite number (rl_games' clip_value False,
#: reward_shaper without min_val/max_val)
NO_LIMIT = 1e30


@dataclass
class Translation:
    """An rl_games file as surge flags.

    Attributes:
        values: flat `flag -> value` (surge's `--cfg` values; command-line flags still win).
        missing: see `translate`'s `collect_missing`.
        notes: one line per key that has no effect here or only approximately, "path: why".
        needs: (rl_games key path, surge flag) for every key that needs a flag of issue 21.
    """

    values: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    needs: list[tuple[str, str]] = field(default_factory=list)
    #: with `collect_missing`: (key path, `--flag=value`) of every key that waits for a flag of
    #: issue 21 this build lacks (without it, the first one is refused)
    missing: list[tuple[str, str]] = field(default_factory=list)


def surge_fields(evaluation: bool) -> dict[str, dataclasses.Field]:
    """The flags this surge build has for the APPO runs the translation makes (core fields, APPO's
    section as registered, and enjoy's with `evaluation`), by name."""
    out = {f.name: f for f in core_fields()}
    out.update({f.name: f for f in algo_section_fields("APPO")})
    if evaluation:
        out.update({f.name: f for f in dataclasses.fields(EvalParams)})
    return out


class Node:
    """One mapping of the file at `path` (`params.config`), recording the keys read (`seen`)."""

    def __init__(self, data: Any, path: str, seen: set[str]):
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise RlGamesKeyError(path, f"must be a mapping, got {data!r}.", "")
        self.data, self.path, self.seen = data, path, seen

    def key(self, name: str) -> str:
        return f"{self.path}.{name}"

    def has(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str, default: Any = None) -> Any:
        self.seen.add(self.key(name))
        return self.data.get(name, default)

    def node(self, name: str) -> Node:
        self.seen.add(self.key(name))
        return Node(self.data.get(name), self.key(name), self.seen)

    def whole(self, name: str) -> None:
        """Marks `name` and everything under it read."""
        self.seen.add(self.key(name) + "/*")
        self.seen.add(self.key(name))


def leaves(data: Any, path: str) -> list[str]:
    """Every key path of a mapping, depth first (a mapping's own key included)."""
    out = []
    for k, v in data.items():
        p = f"{path}.{k}"
        out.append(p)
        if isinstance(v, dict):
            out += leaves(v, p)
    return out


def as_number(path: str, v: Any, kind: type = float) -> Any:
    """`v` as a float (PyYAML reads 1e-4 as a string) or an int.

    Raises:
        ConfigError: not a finite number.
    """
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise RlGamesKeyError(path, f"{v!r} is not a number.", "") from None
    if not math.isfinite(x):
        raise RlGamesKeyError(path, f"{v!r} is not a finite number.", "")
    if kind is int:
        if not x.is_integer():
            raise RlGamesKeyError(path, f"{v!r} is not an integer.", "")
        return int(x)
    return x


def truthy(v: Any) -> bool:
    """rl_games' `if value:` of a YAML scalar (`None`, 'None', False, 0 are off)."""
    return bool(v) and str(v).lower() not in ("none", "false", "0")


class Translator:
    def __init__(
        self,
        evaluation: bool,
        fields: dict[str, dataclasses.Field] | None,
        separate_ok: bool | None,
        collect_missing: bool = False,
    ):
        self.collect_missing = collect_missing
        self.fields = surge_fields(evaluation) if fields is None else fields
        self.evaluation = evaluation
        self.separate_ok = separate_ok
        self.out = Translation()
        self.frameskip = 1
        self.batched = False
        self.one_worker = False

    # ---------------------------------------------------------------- output
    def set(self, flag: str, value: Any) -> None:
        self.out.values[flag] = value

    def note(self, path: str, why: str) -> None:
        self.out.notes.append(f"{path}: {why}")

    def supports(self, flag: str, value: Any = None) -> bool:
        f = self.fields.get(flag)
        if f is None:
            return False
        choices = f.metadata.get("choices")
        return value is None or choices is None or value in choices

    def need(self, path: str, flag: str, value: Any, neutral: Any = ..., why: str = "") -> None:
        """Sets `flag` (a flag another part of issue 21 adds) to `value`; where this surge lacks it
        (or its `value` among the flag's choices), a `value` equal to `neutral` (what surge does
        without the flag) sets nothing, and any other is refused naming the flag.

        Raises:
            ConfigError: `path` needs `--flag=value`, which this surge does not have yet.
        """
        self.out.needs.append((path, flag))
        if self.supports(flag, value):
            self.set(flag, value)
            return
        if neutral is not ... and value == neutral:
            return
        if self.collect_missing:
            self.out.missing.append((path, f"--{flag}={value!r}"))
            return
        raise RlGamesKeyError(
            path,
            f"surge does not support it yet: it maps to --{flag}={value!r}, which this surge "
            f"{'has not got' if flag not in self.fields else 'does not accept'}{why} (issue 21).",
            f"remove the key{'' if neutral is ... else f' or set it to {neutral!r}'}, or update surge.",
        )
