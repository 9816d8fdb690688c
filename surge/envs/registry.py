"""Env families registered by name prefix, Sample Factory style.

A family is a name prefix (`atari_`), a factory that makes an env from the full name, the config
fields the family adds (`env_frameskip`) and the defaults it overrides for the whole family
(image encoder, `obs_scale`...). Any gymnasium id that no family claims is usable directly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from surge.envs.multi_agent import SingleAgentAsMultiAgent, is_multi_agent_env
from surge.errors import ConfigError

#: factory(full_env_name, cfg, render_mode) -> gymnasium.Env or a multi-agent env
EnvFactory = Callable[[str, Any, "str | None"], Any]


@dataclass
class EnvFamily:
    """One family of envs.

    Attributes:
        prefix: names starting with it belong to the family (`atari_`); "" for an exact name.
        make_env: factory(full_env_name, cfg, render_mode) -> env.
        extra_params: a dataclass type whose fields become config fields (`--env_frameskip`).
        default_overrides: config field -> default value for this family.
        names: the env names the family offers (for `--help` and error messages).
        exact: the prefix is a whole env name.
        batched: the factory returns a batched env (`surge.envs.batched`) already.
        eval_env_name: maps a name of the family to the env `enjoy` plays instead (a batched
            family's single-env twin with the same observations, which can render).
    """

    prefix: str
    make_env: EnvFactory
    extra_params: type | None = None
    default_overrides: dict[str, Any] = field(default_factory=dict)
    names: tuple[str, ...] = ()
    exact: bool = False
    batched: bool = False
    eval_env_name: Callable[[str], str] | None = None

    def matches(self, env_name: str) -> bool:
        return env_name == self.prefix if self.exact else env_name.startswith(self.prefix)


_FAMILIES: list[EnvFamily] = []
_BUILTINS_LOADED = False


def register_env_family(
    prefix: str,
    make_env: EnvFactory,
    *,
    extra_params: type | None = None,
    default_overrides: dict[str, Any] | None = None,
    names: tuple[str, ...] = (),
    exact: bool = False,
    batched: bool = False,
    eval_env_name: Callable[[str], str] | None = None,
) -> EnvFamily:
    """Registers (or replaces) an env family; see `EnvFamily` for the arguments.

    Raises:
        ValueError: if `extra_params` is not a dataclass type.
    """
    if extra_params is not None and not dataclasses.is_dataclass(extra_params):
        raise ValueError(f"extra_params of family {prefix!r} must be a dataclass type, got {extra_params!r}")
    fam = EnvFamily(
        prefix=prefix,
        make_env=make_env,
        extra_params=extra_params,
        default_overrides=dict(default_overrides or {}),
        names=tuple(names),
        exact=exact,
        batched=batched,
        eval_env_name=eval_env_name,
    )
    _FAMILIES[:] = [f for f in _FAMILIES if not (f.prefix == prefix and f.exact == exact)]
    _FAMILIES.append(fam)
    return fam


def register_env(name: str, make_env: EnvFactory, **kwargs) -> EnvFamily:
    """Registers a single env by exact name (a family of one)."""
    return register_env_family(name, make_env, exact=True, names=(name,), **kwargs)


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        from surge.envs import atari, classic, envpool_family, mujoco_family  # noqa: F401  (they register themselves)
        from surge.envs import memory  # noqa: F401  (the memory_cue task)
        from surge.envs.doom import family as _doom  # noqa: F401


def _gym_family() -> EnvFamily:
    return EnvFamily("", _make_gym_env)


def _make_gym_env(full_env_name: str, cfg: Any, render_mode: str | None = None) -> gym.Env:
    kwargs = {"render_mode": render_mode} if render_mode is not None else {}
    return gym.make(full_env_name, **kwargs)


def find_family(env_name: str) -> EnvFamily:
    """The family that makes `env_name`: exact names first, then the longest prefix, then gymnasium.

    Raises:
        ConfigError: if no family claims the name and gymnasium does not know it either.
    """
    _load_builtins()
    if not env_name:
        raise ConfigError(
            "env", "no env given.", "pass --env=NAME, e.g. --env=atari_breakout or --env=CartPole-v1."
        )
    exact = [f for f in _FAMILIES if f.exact and f.matches(env_name)]
    if exact:
        return exact[-1]
    prefixed = sorted(
        (f for f in _FAMILIES if not f.exact and f.matches(env_name)), key=lambda f: -len(f.prefix)
    )
    if prefixed:
        return prefixed[0]
    if env_name in gym.registry:
        return _gym_family()
    import difflib

    known = [n for f in _FAMILIES for n in f.names] + list(gym.registry.keys())
    close = difflib.get_close_matches(env_name, known, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else "use a registered family name or a gymnasium id."
    raise ConfigError("env", f"unknown env {env_name!r}.", hint)


def make_env(cfg: Any, render_mode: str | None = None, env_name: str | None = None) -> Any:
    """Makes the env of `cfg.env` and returns it as a multi-agent env (see `multi_agent`)."""
    name = env_name or cfg.env
    family = find_family(name)
    if getattr(cfg, "batched_sampling", False) and not family.batched:
        from surge.envs.batched import GymVectorAsMultiAgent

        return GymVectorAsMultiAgent(lambda: family.make_env(name, cfg, render_mode), int(cfg.env_agents))
    env = family.make_env(name, cfg, render_mode)
    if not is_multi_agent_env(env):
        env = SingleAgentAsMultiAgent(env)
    return env
