"""An env's spaces read before a run is built: the env is made once per process and closed
(`probe_spaces`, cached), for the envs whose spaces choose the run's defaults (`uses_space_defaults`:
plain gymnasium ids, which no family claims)."""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import gymnasium as gym

from surge.envs.registry import find_family, make_single_env


@functools.lru_cache(maxsize=16)
def probe_spaces(env_name: str, env_wrappers: tuple[str, ...] = ()) -> tuple[gym.Space, gym.Space]:
    """One agent's observation and action spaces of `env_name` (wrapped in `env_wrappers`): the
    env is made once per process and closed; later calls return the cached spaces.

    Raises:
        ConfigError: unknown env (see `surge.envs.registry.find_family`).
        EnvError: the env cannot be made, e.g. it needs a package that is not installed (the
            message names the pip install).
    """
    family = find_family(env_name)
    stub = SimpleNamespace(env=env_name, env_wrappers=list(env_wrappers))
    env = make_single_env(family, env_name, stub, None)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def uses_space_defaults(family: Any) -> bool:
    """True for the generic family of plain gymnasium ids (and `package.module:EnvId` of one): no
    family sets defaults for them, so the spaces do."""
    return family is not None and family.prefix == "" and not family.exact
