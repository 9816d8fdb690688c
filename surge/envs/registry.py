"""Env families registered by name prefix, Sample Factory style.

A family is a name prefix (`atari_`), a factory that makes an env from the full name, the config
fields the family adds (`env_frameskip`) and the defaults it overrides for the whole family
(image encoder, `obs_scale`...). Any gymnasium id that no family claims is usable directly.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import gymnasium as gym

from surge.cfg.config import Config
from surge.envs.action_masks import wrap_rl_games_mask
from surge.envs.batched import GymVectorAsMultiAgent
from surge.envs.multi_agent import SingleAgentAsMultiAgent, is_multi_agent_env
from surge.envs.prev_action_reward import wrap_prev_action_reward
from surge.envs.unknown_names import unknown_env_fix
from surge.errors import ConfigError, EnvError, SurgeError

#: factory(full_env_name, cfg, render_mode) -> gymnasium.Env or a multi-agent env
EnvFactory = Callable[[str, Any, "str | None"], Any]


@dataclass
class EnvFamily:
    """One family of envs.

    Attributes:
        prefix: names starting with it belong to the family (`atari_`); "" for an exact name.
        make_env: factory(full_env_name, cfg, render_mode) -> env.
        extra_params: a dataclass type whose fields become flags (`--env_frameskip`) and whose
            instance is the config's section `cfg.env_params` (`surge.cfg.family_params`); a
            `validate(self)` method, if it has one, raises `ConfigError` for bad values before
            any process starts.
        default_overrides: config field -> default value for this family.
        names: the env names the family offers (for `--help` and error messages).
        exact: the prefix is a whole env name.
        batched: the factory returns a batched env (`surge.envs.batched`) already.
        eval_env_name: maps a name of the family to the env `enjoy` plays instead (a batched
            family's single-env twin with the same observations, which can render).
        check_name: raises `ConfigError` (with the closest names) for a name of the family that
            its factory would refuse (`atari_breakot`); `check_env_name` calls it when the config
            is parsed, so that a typo is refused before the experiment folder is written. It must
            be cheap: no env is made.
        frame_stack: config -> F when the family's observations are stacks of F frames `[F, ...]`,
            newest last, that consecutive steps of an episode share F-1 frames of, and whose first
            observation after a reset repeats the reset frame F times (gymnasium's
            `FrameStackObservation`); replays then store each frame once (`surge.replay.frames`,
            `--replay_frame_storage`). None: observations are stored whole.
        notes: config -> lines for the run's log about what the env will be (the Doom family:
            which map and files a scenario plays); logged once by the run's main process
            (`env_notes`). None: nothing to say.
        preload: modules the family's factory imports that take long to import (EnvPool: about
            1.6 s, jax with it); the async placement's fork server imports them once, so that each
            rollout worker forks with them imported instead of importing them itself.
    """

    prefix: str
    make_env: EnvFactory
    extra_params: type | None = None
    default_overrides: dict[str, Any] = field(default_factory=dict)
    names: tuple[str, ...] = ()
    exact: bool = False
    batched: bool = False
    eval_env_name: Callable[[str], str] | None = None
    check_name: Callable[[str], object] | None = None
    frame_stack: Callable[[Any], int] | None = None
    notes: Callable[[Any], list[str]] | None = None
    preload: tuple[str, ...] = ()

    def matches(self, env_name: str) -> bool:
        return env_name == self.prefix if self.exact else env_name.startswith(self.prefix)


_FAMILIES: list[EnvFamily] = []


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
    check_name: Callable[[str], object] | None = None,
    frame_stack: Callable[[Any], int] | None = None,
    notes: Callable[[Any], list[str]] | None = None,
    preload: tuple[str, ...] = (),
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
        check_name=check_name,
        frame_stack=frame_stack,
        notes=notes,
        preload=tuple(preload),
    )
    _FAMILIES[:] = [f for f in _FAMILIES if not (f.prefix == prefix and f.exact == exact)]
    _FAMILIES.append(fam)
    return fam


def register_env(name: str, make_env: EnvFactory, **kwargs: Any) -> EnvFamily:
    """Registers a single env by exact name (a family of one)."""
    return register_env_family(name, make_env, exact=True, names=(name,), **kwargs)


def _gym_family() -> EnvFamily:
    return EnvFamily("", _make_gym_env)


def _make_gym_env(full_env_name: str, cfg: Config, render_mode: str | None = None) -> gym.Env:
    kwargs: dict[str, Any] = (
        {"render_mode": render_mode} if render_mode is not None else {}
    )  # gym.make's **kwargs
    return gym.make(full_env_name, **kwargs)


def _make_with_family(
    make: EnvFactory, env_id: str, full_env_name: str, cfg: Config, render_mode: str | None
) -> Any:
    return make(env_id, cfg, render_mode)


def _module_family(env_name: str) -> EnvFamily:
    """The family of `package.module:EnvId`: imports the module (which registers the id with
    gymnasium, or a surge family), then finds `EnvId`."""
    module, _, env_id = env_name.partition(":")
    if not module or not env_id:
        raise ConfigError(
            "env",
            f"{env_name!r} is not of the form package.module:EnvId.",
            "e.g. --env=my_package.envs:MyEnv-v0.",
        )
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(
            "env",
            f"cannot import module {module!r} of {env_name!r}: {e}.",
            f"install the package that provides {module} (pip install ...), or add its folder to PYTHONPATH.",
        ) from e
    except Exception as e:  # noqa: BLE001 - the module's own code failed
        raise EnvError(f"importing {module!r} (for --env={env_name}) failed: {type(e).__name__}: {e}") from e
    try:
        family = find_family(env_id)
    except ConfigError:
        raise ConfigError(
            "env",
            f"importing {module!r} registered no env {env_id!r}.",
            "use the id the module registers (gymnasium.register(id=...) or surge's register_env_family).",
        ) from None
    if family.prefix == "" and not family.exact:  # a gymnasium id: gym.make takes "module:EnvId" itself
        return family
    return dataclasses.replace(family, make_env=functools.partial(_make_with_family, family.make_env, env_id))


def find_family(env_name: str) -> EnvFamily:
    """The family that makes `env_name`: exact names first, then the longest prefix, then gymnasium;
    `package.module:EnvId` imports the module first (in every process that calls this).

    Raises:
        ConfigError: if no family claims the name and gymnasium does not know it either, or the
            module of `package.module:EnvId` cannot be imported.
        EnvError: importing that module raised something other than ImportError.
    """
    if not env_name:
        raise ConfigError(
            "env", "no env given.", "pass --env=NAME, e.g. --env=atari_breakout or --env=CartPole-v1."
        )
    if ":" in env_name:
        return _module_family(env_name)
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
    known_case = unknown_env_fix(env_name)
    if known_case is not None:
        raise ConfigError("env", *known_case)
    known = [n for f in _FAMILIES for n in f.names] + list(gym.registry.keys())
    close = difflib.get_close_matches(env_name, known, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else "use a registered family name or a gymnasium id."
    raise ConfigError("env", f"unknown env {env_name!r}.", hint)


def same_family(a: EnvFamily, b: EnvFamily) -> bool:
    """Whether two `find_family` results are one family: the same prefix and factory, a
    `package.module:EnvId` name's family counted as the family it wraps."""

    def factory(f: EnvFamily) -> EnvFactory:
        m = f.make_env
        return m.args[0] if isinstance(m, functools.partial) and m.func is _make_with_family else m

    return a.prefix == b.prefix and factory(a) == factory(b)


def check_env_name(env_name: str) -> EnvFamily:
    """The family of `env_name` (`find_family`), after its `check_name` accepted the name: the whole
    check of a name that can be done without making the env, done when the config is parsed.

    Raises:
        ConfigError: unknown env, or a name of a family that the family does not offer (with
            the closest names: `atari_breakot` -> did you mean atari_breakout?).
        EnvError: the family needs a package that is not installed to know its names (ale-py).
    """
    family = find_family(env_name)
    if family.check_name is not None:
        family.check_name(env_name)
    return family


def env_notes(cfg: Config) -> list[str]:
    """The lines the family of `cfg.env` has for the run's log (`EnvFamily.notes`); [] when it has
    none. Logged once, by the main process of a training run or of `enjoy` (its env processes make
    envs without logging this)."""
    family = find_family(cfg.env)
    return [] if family.notes is None else list(family.notes(cfg))


def resolve_wrapper(name: str) -> Callable[[gym.Env], gym.Env]:
    """The wrapper class of an `--env_wrappers` entry: `gymnasium.wrappers.NAME`, or the class at
    `package.module:Class` (or `package.module.Class`).

    Raises:
        ConfigError: the entry is not a non-empty string (a YAML `env_wrappers: [null]`), or the
            module cannot be imported or has no such class (with close matches).
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(
            "env_wrappers",
            f"each entry must be a wrapper's name, got {name!r}.",
            "give names such as FlattenObservation or package.module:Class.",
        )
    if ":" in name:
        module, _, attr = name.partition(":")
    elif "." in name:
        module, _, attr = name.rpartition(".")
    else:
        module, attr = "gymnasium.wrappers", name
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(
            "env_wrappers",
            f"cannot import {module!r} for wrapper {name!r}: {e}.",
            "give a gymnasium.wrappers name (FlattenObservation) or package.module:Class of an installed package.",
        ) from e
    obj = getattr(mod, attr, None)
    if obj is None or not callable(obj):
        names = [n for n in dir(mod) if not n.startswith("_") and isinstance(getattr(mod, n), type)]
        close = difflib.get_close_matches(attr, names, n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise ConfigError(
            "env_wrappers",
            f"{module} has no wrapper class {attr!r}.",
            hint + "see https://gymnasium.farama.org/api/wrappers/ for gymnasium's wrappers.",
        )
    return obj


def apply_env_wrappers(env: Any, cfg: Config | SimpleNamespace) -> Any:
    """`env` wrapped in `cfg.env_wrappers`, in order (the first is innermost).

    Raises:
        ConfigError: wrappers were given for an env that is not a single-agent `gymnasium.Env`,
            or a wrapper cannot be built from the env alone (it needs arguments).
        EnvError: a wrapper raised for this env (e.g. its observation space).
    """
    names = list(getattr(cfg, "env_wrappers", None) or [])
    if not names:
        return env
    if not isinstance(env, gym.Env):
        raise ConfigError(
            "env_wrappers",
            f"gymnasium wrappers need a single-agent gymnasium.Env; {cfg.env!r} makes a {type(env).__name__}.",
            "remove --env_wrappers, or wrap the env in its family's factory.",
        )
    for name in names:
        wrapper = resolve_wrapper(name)
        try:
            env = wrapper(env)
        except TypeError as e:
            raise ConfigError(
                "env_wrappers",
                f"{name}(env) failed: {e}.",
                "a wrapper given by name gets only the env: for one that needs arguments, subclass it "
                "with the arguments set in a module of yours and pass package.module:Class.",
            ) from e
        except SurgeError:
            raise
        except Exception as e:  # noqa: BLE001 - name the wrapper and the env
            raise EnvError(f"wrapper {name} failed on env {cfg.env!r}: {type(e).__name__}: {e}") from e
    return env


#: pip installs of optional env dependencies, by the top-level module that is missing
_EXTRAS = {
    "Box2D": 'pip install "surge-rl[box2d]" (in a checkout of surge: pip install -e ".[box2d]")',
    "ale_py": 'pip install "surge-rl[atari]"',
    "cv2": 'pip install "surge-rl[atari]"',
    "vizdoom": 'pip install "surge-rl[doom]"',
    "mujoco": 'pip install "surge-rl[mujoco]"',
    "envpool": 'pip install "surge-rl[envpool]"',
    "brax": 'pip install "surge-rl[brax]"',
    "jax": 'pip install "surge-rl[brax]"',
    "pygame": 'pip install "surge-rl[video]"',
    "pettingzoo": 'pip install "surge-rl[pettingzoo]"',
    "pymunk": 'pip install "surge-rl[pettingzoo]"',
}


def make_single_env(
    family: EnvFamily, name: str, cfg: Config | SimpleNamespace, render_mode: str | None = None
) -> Any:
    """One env of `family` (its factory's output) wrapped in `cfg.env_wrappers`, then, for an env of
    rl_games' mask API (`has_action_mask()` True), in `RlGamesActionMask` (its `get_action_mask()`
    as the observation's `action_mask` entry; `surge.envs.action_masks.wrap_rl_games_mask`), then,
    with `--use_prev_action_reward`, in `surge.envs.prev_action_reward.PrevActionReward`.
    `cfg` is the run's config, or only its `env` and `env_wrappers` when the spaces are probed
    before a config exists (`surge.cfg.space_defaults.probe_spaces`).

    Raises:
        EnvError: the env needs a package that is not installed (the message names the pip install).
    """
    try:
        env = family.make_env(name, cfg, render_mode)
    except (gym.error.DependencyNotInstalled, ModuleNotFoundError) as e:
        missing = getattr(e, "name", None) or next((m for m in _EXTRAS if m in str(e)), None)
        extra = _EXTRAS.get((missing or "").split(".")[0])
        if extra:
            # surge's extra only: the package's own advice (gymnasium's "pip install swig followed
            # by ...") would be a second, competing fix, and an outdated one (Box2D has wheels)
            raise EnvError(f"env {name!r} needs {missing}, which is not installed. Fix: {extra}") from e
        plain = isinstance(e, ModuleNotFoundError) and missing  # "No module named 'x'" gives no advice
        raise EnvError(
            f"env {name!r} needs a package that is not installed: {e}"
            + (f" Fix: pip install {missing}" if plain else "")
        ) from e

    return wrap_prev_action_reward(wrap_rl_games_mask(apply_env_wrappers(env, cfg)), cfg)


def make_env(cfg: Config, render_mode: str | None = None, env_name: str | None = None) -> Any:
    """Makes the env of `cfg.env` (wrapped in `cfg.env_wrappers`) and returns it as a multi-agent
    env (see `multi_agent`). Every process makes its envs here.

    Raises:
        ConfigError, EnvError: see `find_family` and `apply_env_wrappers`.
    """
    name = env_name or cfg.env
    family = find_family(name)
    if getattr(cfg, "batched_sampling", False) and not family.batched:
        return GymVectorAsMultiAgent(
            lambda: make_single_env(family, name, cfg, render_mode), int(cfg.env_agents)
        )
    env = make_single_env(family, name, cfg, render_mode)
    if not is_multi_agent_env(env):
        env = SingleAgentAsMultiAgent(env)
    return env
