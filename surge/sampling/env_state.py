"""Saving and restoring an env object's whole state, for an exact resume of the serial placement.

The state of the object surge steps (its wrappers included: the episode being recorded, time
limits, frame stacks, random generators) is written as plain values (`surge.sampling.plain_state`):
every attribute of every object of the env, numpy arrays as bytes, generators as their state. On
resume it is written back into the env this run made with its own factory, so the env continues
mid-episode where it stopped. Reading the file runs no code that the file names: an experiment
folder shared by a colleague or downloaded with a model is data (`sampler_state.pth` loads with
`torch.load(weights_only=True)`).

The ALE emulator (`ale_py.ALEInterface`, a C object) is saved as its serialized state with the
emulator's RNG (`cloneState(include_rng=True)`) and put back with `restoreState`.

An env holding any other object whose state Python cannot see (MuJoCo's `MjModel`/`MjData`,
Box2D's world, VizDoom's `DoomGame`, sockets, processes) raises `EnvStateUnsupported` naming it; the
serial placement then resumes as before (fresh, seeded resets) and says so.
"""

from __future__ import annotations

from typing import Any

import torch

from surge.sampling.plain_state import (
    Extra,
    PlainStateMismatch,
    PlainStateUnsupported,
    check,
    decode,
    encode,
)

#: the version of the format; a state of another one is refused
FORMAT = "surge.env_state/1"


class EnvStateUnsupported(Exception):
    """This env's state cannot be saved exactly (the message says why)."""


class EnvStateRefused(ValueError):
    """A saved env state is not loaded (the message says why: an older pickled format, or a state
    that does not fit this run's env)."""


def _ale_save(ale: Any) -> bytes:
    return bytes(ale.cloneState(include_rng=True).serialize())


def _ale_load(ale: Any, data: Any, apply: bool) -> None:
    import ale_py

    if not isinstance(data, bytes):
        raise TypeError(f"ALE state is a {type(data).__name__}, not bytes")
    state = ale_py.ALEState(data)
    if apply:
        ale.restoreState(state)


_EXTRAS = {"ale_py._ale_py.ALEInterface": Extra(_ale_save, _ale_load)}


def save_env_state(env: Any) -> dict[str, Any]:
    """The state of `env` (the object surge steps, with its wrappers) as tensors and plain values,
    for `restore_env_state`.

    Raises:
        EnvStateUnsupported: an object of the env cannot be saved (the message names it).
    """
    try:
        return {"format": FORMAT, "env": encode(env, _EXTRAS)}
    except PlainStateUnsupported as e:
        raise EnvStateUnsupported(str(e)) from e


def _checked(state: Any) -> Any:
    if isinstance(state, torch.Tensor):
        raise EnvStateRefused(
            "the env was saved as a pickle (surge before the plain-value format): not loaded, as "
            "unpickling a file can run any code"
        )
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        got = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise EnvStateRefused(f"the env state's format is {got!r}, not {FORMAT!r}")
    if "env" not in state:
        raise EnvStateRefused("the env state holds no env")
    return state["env"]


def check_env_state(env: Any, state: Any) -> None:
    """Checks that `restore_env_state(env, state)` would succeed, changing nothing.

    Raises:
        EnvStateRefused: as `restore_env_state`.
    """
    try:
        check(_checked(state), env, _EXTRAS)
    except (PlainStateMismatch, RecursionError) as e:
        raise EnvStateRefused(f"the saved env does not fit this run's env ({e})") from e


def restore_env_state(env: Any, state: Any) -> Any:
    """Puts the state `save_env_state` saved into `env`, an env made by the same factory (the same
    env and wrappers), in place; returns `env`. Nothing of `env` changes when it raises.

    Raises:
        EnvStateRefused: `state` is of another format (a pickle written by an older surge) or does
            not fit `env` (another class at an attribute, a missing object); the message names it.
    """
    try:
        return decode(_checked(state), env, _EXTRAS)
    except (PlainStateMismatch, RecursionError) as e:
        raise EnvStateRefused(f"the saved env does not fit this run's env ({e})") from e
