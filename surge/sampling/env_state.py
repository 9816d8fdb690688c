"""Saving and restoring an env object's whole state, for an exact resume of the serial placement.

An env is saved by pickling the object surge steps (its wrappers included: the episode being
recorded, time limits, frame stacks), so it resumes mid-episode with its own random generator where
it stopped. That is only exact where pickling captures the state, so an env is accepted only when:

- no object of its wrapper chain is an `EzPickle` (gymnasium's MuJoCo, Box2D and ALE envs pickle as
  their constructor arguments: unpickling builds a *fresh* env, silently not the one that stopped),
  except the ALE `AtariEnv`, whose emulator state (with the emulator's RNG) and random generator are
  saved beside it (`ALEInterface.cloneState(include_rng=True)`) and put back after unpickling;
- pickling succeeds (VizDoom's `DoomGame`, envs holding sockets, processes or open files cannot be
  pickled; VizDoom has no way to save a game's state at all).

An env that is not accepted raises `EnvStateUnsupported` saying why; the serial placement then
resumes as before (fresh, seeded resets) and says so.
"""

from __future__ import annotations

import pickle
from typing import Any

from gymnasium.utils import EzPickle


class EnvStateUnsupported(Exception):
    """This env's state cannot be saved exactly (the message says why)."""


def _chain(env: Any) -> list[Any]:
    """The env objects from the outermost wrapper down to the unwrapped env."""
    out, seen = [], set()
    while env is not None and id(env) not in seen:
        seen.add(id(env))
        out.append(env)
        env = getattr(env, "env", None)
    return out


def _is_ale(obj: Any) -> bool:
    return type(obj).__name__ == "AtariEnv" and hasattr(obj, "ale")


def save_env_state(env: Any) -> bytes:
    """The state of `env` (the object surge steps, with its wrappers) as bytes for `load_env_state`.

    Raises:
        EnvStateUnsupported: the env's state cannot be saved exactly (see the module docstring).
    """
    chain = _chain(env)
    extra: dict[str, Any] = {}
    for obj in chain:
        if _is_ale(obj):
            extra["ale"] = (obj.ale.cloneState(include_rng=True), getattr(obj, "_np_random", None))
        elif isinstance(obj, EzPickle):
            raise EnvStateUnsupported(
                f"{type(obj).__name__} pickles as its constructor arguments (EzPickle): unpickling would "
                "make a fresh env, not restore the one that stopped"
            )
    try:
        return pickle.dumps((env, extra), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - any pickling failure means the same: not savable
        raise EnvStateUnsupported(f"{type(chain[-1]).__name__} cannot be pickled ({e})") from e


def load_env_state(data: bytes) -> Any:
    """The env object saved by `save_env_state`, in the state it had. `data` is a pickle: load only
    files this run wrote."""
    env, extra = pickle.loads(data)  # noqa: S301 - our own file, written by save_env_state
    if "ale" in extra:
        ale_env = next(obj for obj in _chain(env) if _is_ale(obj))
        state, np_random = extra["ale"]
        ale_env.ale.restoreState(state)
        if np_random is not None:
            ale_env._np_random = np_random
    return env
