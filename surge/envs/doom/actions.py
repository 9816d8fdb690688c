"""Doom action spaces: VizDoom buttons grouped into heads, as in Sample Factory's Doom envs.

A head is one discrete choice. A `ButtonHead` picks at most one of its buttons (index 0 = none,
k = press button k-1): `(TURN_LEFT, TURN_RIGHT)` is `Discrete(3)`. A `DeltaHead` drives one delta
button (`TURN_LEFT_RIGHT_DELTA`: degrees per tic) with one of `n` evenly spaced values in
`[low, high]` (Sample Factory's `Discretized` turning). One head gives a `Discrete` space, several
a `Tuple` of `Discrete`, one sub-action per head. With `--doom_continuous_turning` the turning head
is a `ContinuousHead` (`Box(-1, 1, (1,))`, times 7.5 degrees per tic) and the space a Tuple mixing
Discrete and Box; its actions arrive as one float row (discrete indices as floats).

The VizDoom button vector is the concatenation of every head's buttons, in head order; surge sets
it with `DoomGame.set_available_buttons`, so a scenario's `.cfg` button list does not matter.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np


@dataclass(frozen=True)
class ButtonHead:
    """At most one of `buttons` pressed: `Discrete(len(buttons) + 1)`, 0 = none."""

    buttons: tuple[str, ...]

    @property
    def n(self) -> int:
        return len(self.buttons) + 1

    def table(self) -> np.ndarray:
        """`[n, len(buttons)]` float64: the button values of each choice."""
        return np.eye(len(self.buttons) + 1, len(self.buttons), k=-1)


@dataclass(frozen=True)
class DeltaHead:
    """One delta button set to one of `n` values evenly spaced in `[low, high]`."""

    button: str
    n: int
    low: float
    high: float

    @property
    def buttons(self) -> tuple[str, ...]:
        return (self.button,)

    def table(self) -> np.ndarray:
        return np.linspace(self.low, self.high, self.n).reshape(self.n, 1)


@dataclass(frozen=True)
class ContinuousHead:
    """One delta button driven continuously: `Box(-1, 1, (1,))` times `scale` (Sample Factory's
    continuous turning: 7.5 degrees per tic at ±1)."""

    button: str
    scale: float = 7.5

    @property
    def buttons(self) -> tuple[str, ...]:
        return (self.button,)


Head = ButtonHead | DeltaHead | ContinuousHead


def with_continuous_turning(heads: tuple[Head, ...]) -> tuple[Head, ...]:
    """`heads` with every discretised delta head replaced by a continuous one.

    Raises:
        ValueError: when `heads` has no delta head to replace.
    """
    if not any(isinstance(h, DeltaHead) for h in heads):
        raise ValueError("this scenario has no turning-delta head to make continuous")
    return tuple(ContinuousHead(h.button) if isinstance(h, DeltaHead) else h for h in heads)


class DoomActions:
    """Converts agent actions (an int, or one int per head) into VizDoom button vectors.

    Args:
        heads: the heads, in order.

    Attributes:
        space: `Discrete(n)` for one head, else `Tuple(Discrete(n_i) ...)`.
        buttons: VizDoom button names, in the order of the button vector.
    """

    def __init__(self, heads: tuple[Head, ...]):
        if not heads:
            raise ValueError("a Doom action space needs at least one head")
        self.heads = heads
        self.buttons: tuple[str, ...] = tuple(b for h in heads for b in h.buttons)
        # per head: the button table of a discrete head, or None and the scale of a continuous one
        self._tables: list[np.ndarray | None] = [
            None if isinstance(h, ContinuousHead) else h.table() for h in heads
        ]
        self._scales = [h.scale if isinstance(h, ContinuousHead) else 1.0 for h in heads]
        self._only_table = self._tables[0] if len(heads) == 1 else None  # one discrete head
        spaces = [
            gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
            if isinstance(h, ContinuousHead)
            else gym.spaces.Discrete(h.n)
            for h in heads
        ]
        self.space: gym.Space = spaces[0] if len(spaces) == 1 else gym.spaces.Tuple(spaces)

    def to_buttons(self, action) -> list[float]:
        """The button vector for `action` (an int for one head, a sequence of ints otherwise).

        Raises:
            ValueError: for an action of the wrong length.
        """
        if self._only_table is not None:
            return self._only_table[int(np.asarray(action).reshape(-1)[0])].tolist()
        if isinstance(action, (tuple, list)):  # a space sample: ints and (1,) arrays
            parts = np.concatenate([np.asarray(x, np.float64).reshape(-1) for x in action])
        else:  # a row from the trajectory buffers
            parts = np.asarray(action).reshape(-1)
        if len(parts) != len(self._tables):
            raise ValueError(f"expected {len(self._tables)} sub-actions, got {len(parts)}: {action!r}")
        out: list[float] = []
        for scale, table, a in zip(self._scales, self._tables, parts, strict=True):
            if table is None:  # continuous: a value in [-1, 1]
                out.append(float(np.clip(a, -1.0, 1.0)) * scale)
            else:
                out.extend(table[int(a)].tolist())
        return out


# --- the heads of Sample Factory's Doom action spaces (sf_examples/vizdoom/doom/action_space.py) ---
TURN = ButtonHead(("TURN_LEFT", "TURN_RIGHT"))
MOVE = ButtonHead(("MOVE_FORWARD", "MOVE_BACKWARD"))
STRAFE = ButtonHead(("MOVE_RIGHT", "MOVE_LEFT"))
ATTACK = ButtonHead(("ATTACK",))
SPEED = ButtonHead(("SPEED",))
USE = ButtonHead(("USE",))
WEAPON = ButtonHead(tuple(f"SELECT_WEAPON{i}" for i in range(1, 8)))


def turn_delta(n: int, limit: float) -> DeltaHead:
    """Discretised continuous turning: `n` values in `[-limit, limit]` degrees per tic."""
    return DeltaHead("TURN_LEFT_RIGHT_DELTA", n, -limit, limit)


def turn_and_attack() -> tuple[Head, ...]:
    """defend_the_center / defend_the_line: `Tuple(Discrete(3), Discrete(2))`."""
    return (TURN, ATTACK)


def basic_navigation() -> tuple[Head, ...]:
    """my_way_home: turn and move, `Tuple(Discrete(3), Discrete(3))`."""
    return (TURN, MOVE)


def extended() -> tuple[Head, ...]:
    """deadly_corridor: turn, move, strafe, attack."""
    return (TURN, MOVE, STRAFE, ATTACK)


def discretized_no_weapons() -> tuple[Head, ...]:
    """battle: move, strafe, attack, sprint and 11-way turning in [-10, 10] degrees per tic."""
    return (MOVE, STRAFE, ATTACK, SPEED, turn_delta(11, 10.0))


def full_discretized(with_use: bool = False) -> tuple[Head, ...]:
    """duel / deathmatch: move, strafe, weapon 1-7, attack, sprint, [use], 21-way turning in
    [-12.5, 12.5] degrees per tic."""
    heads: list[Head] = [MOVE, STRAFE, WEAPON, ATTACK, SPEED]
    if with_use:
        heads.append(USE)
    heads.append(turn_delta(21, 12.5))
    return tuple(heads)
