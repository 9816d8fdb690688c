"""`check_env`: finds, in plain words, what keeps a user's env from running in surge.

It checks the gymnasium single-agent API (`reset -> (obs, info)`, `step -> (obs, reward,
terminated, truncated, info)`) and surge's multi-agent contract (`surge.envs.multi_agent`), the
spaces surge's models support, and the observations, rewards and flags the env really returns
over a short run of random actions. For single-agent `gymnasium.Env`s it then runs gymnasium's own
checker (`gymnasium.utils.env_checker`); its failures become `EnvError`s, and its seeding and
determinism findings become warnings (surge does not need them to train).

Command line: `surge check-env --env=NAME [--num_steps=50] [--FIELD=VALUE ...]` (see `main`).
"""

from __future__ import annotations

import argparse
import inspect
import math
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import RecordEpisodeStatistics

from surge.envs.action_masks import MASK_KEY, check_mask_space, has_action_mask, sample_legal
from surge.envs.check_findings import NOT_AN_ARRAY, OUT_OF_BOUNDS, Findings
from surge.envs.multi_agent import SingleAgentAsMultiAgent, is_multi_agent_env
from surge.envs.wrappers import is_flattenable, unflattenable_entries
from surge.errors import EnvError, SurgeError

SUPPORTED_OBS = "a Box (vector or image), or a Dict of Box"
SUPPORTED_ACTIONS = "Discrete, MultiDiscrete, Box, or a Tuple of Discrete and Box"

GYMNASIUM_API_HINT = (
    "See https://gymnasium.farama.org/introduction/create_custom_env/ for the gymnasium API, or wrap "
    "an old gym env with shimmy's GymV26CompatibilityV0."
)


# --------------------------------------------------------------------------------------------- entry point


def check_env(
    env_or_name: Any, cfg: Any = None, num_steps: int = 50, notes: list[str] | None = None
) -> list[str]:
    """Checks that an env can run in surge; raises at the first problem, returns the warnings.

    The env is reset and stepped with random actions (`action_space.sample()`), so reset it again
    before any further use. An env made here from a name is closed at the end.

    Args:
        env_or_name: a `gymnasium.Env`, a multi-agent env (`num_agents`, list-valued `reset`/`step`,
            see `surge.envs.multi_agent`), or an env name (`atari_breakout`, `CartPole-v1`), made
            with the family factory of `surge.envs.registry`.
        cfg: config used to make a named env and for model-related hints (`obs_scale`,
            `encoder_custom`); None: `config_for_env(name)` for a name, no hints for an env object.
        num_steps: random steps taken (env steps; episodes that end are reset and go on); legal
            ones under the observations' action masks (`surge.envs.action_masks`).
        notes: if given, receives what the check learned about the env that is not a problem
            (a PettingZoo env's API and agents, its action masks and how many actions they allow).

    Returns:
        Warnings: things that train but look unintended, one sentence per distinct problem (one
        seen at several steps says how often and where first; gymnasium's warnings of a problem
        already named are left out).

    Raises:
        EnvError: the env breaks the API or returns data that does not match its spaces; the
            message says what is wrong and how to fix it.
        ConfigError: `env_or_name` is a name that no family and no gymnasium id knows.
    """
    found = Findings()
    owned = isinstance(env_or_name, str)
    if owned:
        env, cfg = _make_named_env(env_or_name, cfg)
    else:
        env = env_or_name
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            legal_counts: list[int] = []
            _check_any(env, owned, cfg, num_steps, found, legal_counts)
            if notes is not None:
                notes.extend(_env_notes(env, legal_counts))
    finally:
        if owned:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - closing must not hide the check's result
                pass
    for w in caught:
        text = _clean(str(w.message))
        # gymnasium warns when it is given a wrapped env; surge's envs are wrapped on purpose.
        if "different from the unwrapped version" not in text and not found.already_named(text):
            found.append(f"{w.category.__name__}: {text}")
    return found.lines()


def _check_any(
    env: Any, owned: bool, cfg: Any, num_steps: int, found: Findings, legal_counts: list[int]
) -> None:
    if isinstance(env, SingleAgentAsMultiAgent):
        inner = env.env
        if isinstance(inner, RecordEpisodeStatistics):  # the one the wrapper added, if outermost
            inner = inner.env
        _check_single_agent(inner, cfg, num_steps, found)
        _check_multi_agent(env, cfg, min(num_steps, 10), found, legal_counts)
    elif owned and isinstance(env, gym.Env) and not is_multi_agent_env(env):
        # surge wraps it so (registry.make_env): check the env, then the wrapped env
        _check_single_agent(env, cfg, num_steps, found)
        if cfg is not None:  # what `surge train` with these flags refuses, refused here too
            check_env_spaces(cfg, env.observation_space, env.action_space, memory=False)
        _check_multi_agent(SingleAgentAsMultiAgent(env), cfg, min(num_steps, 10), found, legal_counts)
    elif is_multi_agent_env(env):
        _check_multi_agent(env, cfg, num_steps, found, legal_counts)
    else:
        _check_single_agent(env, cfg, num_steps, found)


def config_for_env(env_name: str, argv: list[str] | None = None) -> Any:
    """The config training would start from for `env_name`: `Config` with the family's section
    (`cfg.env_params`), the family's default overrides (or, for a plain gymnasium id, the defaults
    its spaces choose: `surge.cfg.space_defaults`) applied, then the `--name=value` flags of `argv`.

    Raises:
        ConfigError: unknown env name, unknown flag or a value of the wrong type.
        EnvError: a plain gymnasium id that cannot be made (e.g. a missing package).
    """
    from surge.app.space_defaults import env_space_defaults
    from surge.cfg.cli import refuse_unknown_args
    from surge.cfg.config import Config
    from surge.cfg.space_defaults import as_overrides
    from surge.envs.registry import check_env_name
    from surge.learning.run_flags import build_parser, field_defaults, flag_fields

    family = check_env_name(env_name)
    defaults = field_defaults(family)
    explicit = {}
    if argv:  # first for the flags the spaces' defaults depend on (env_wrappers, use_rnn, rollout)
        parser = build_parser(flag_fields(family), defaults, prog="surge check-env")
        explicit = vars(parser.parse_known_args(argv)[0])
    defaults = field_defaults(
        family, space_overrides=as_overrides(env_space_defaults(family, env_name, explicit))
    )
    defaults["env"] = env_name
    if argv:
        parser = build_parser(flag_fields(family), defaults, prog="surge check-env")
        namespace, unknown = parser.parse_known_args(argv)
        refuse_unknown_args(unknown, set(defaults))
        explicit = vars(namespace)
    return Config.from_flat({**defaults, **explicit}, family.extra_params)


def _make_named_env(env_name: str, cfg: Any) -> tuple[Any, Any]:
    from surge.envs.registry import find_family, make_single_env

    if cfg is None:
        cfg = config_for_env(env_name)
    family = find_family(env_name)  # ConfigError for unknown names
    try:
        # The family's factory (and --env_wrappers), not registry.make_env: the raw env gives clearer
        # messages than the SingleAgentAsMultiAgent wrapper that make_env adds (checked too, after).
        env = make_single_env(family, env_name, cfg, None)
    except SurgeError:
        raise
    except Exception as e:
        raise EnvError(f"making env {env_name!r} failed: {type(e).__name__}: {e}") from e
    return env, cfg


# --------------------------------------------------------------------------------------------- spaces


def _check_spaces(env: Any, cfg: Any, found: Findings) -> None:
    for attr in ("observation_space", "action_space"):
        space = getattr(env, attr, None)
        if space is None:
            raise EnvError(
                f"the env has no {attr}. Fix: set self.{attr} (a gymnasium.spaces object, for one agent) "
                "in the env's __init__."
            )
        if not isinstance(space, gym.spaces.Space):
            old_gym = type(space).__module__.startswith("gym.")
            raise EnvError(
                f"{attr} is a {type(space).__module__}.{type(space).__name__}, not a gymnasium space. Fix: "
                + (
                    "the env uses the old `gym` package; import gymnasium as gym instead."
                    if old_gym
                    else f"use gymnasium.spaces ({SUPPORTED_OBS} for observations)."
                )
            )
    obs_space, act_space = env.observation_space, env.action_space
    if not _supported_obs_space(obs_space):
        if getattr(cfg, "encoder_custom", ""):
            found.append(
                f"observation_space {obs_space} is not {SUPPORTED_OBS}; your custom encoder "
                f"{cfg.encoder_custom!r} must handle it."
            )
        else:
            _refuse_unsupported_obs(obs_space, cfg)
    _check_action_space(act_space)
    for path, box in _boxes(obs_space):
        shape = tuple(box.shape)
        if len(shape) == 3 and shape[-1] in (1, 3, 4) and shape[0] not in (1, 3, 4):
            found.append(
                f"observation{path} has shape {shape}, which looks channels-last (H, W, C); surge's conv "
                f"encoders expect channels first (C, H, W). Pass "
                f"`{_with_wrappers(cfg, 'surge.envs.wrappers:ChannelsFirst')}`, or transpose in the env "
                "(obs.transpose(2, 0, 1))."
            )
        if (
            len(shape) == 3
            and box.dtype == np.uint8
            and cfg is not None
            and float(getattr(cfg, "obs_scale", 255.0)) == 1.0
        ):
            found.append(
                f"observation{path} is a uint8 image but obs_scale is 1: the network sees values up to "
                "255. Pass --obs_scale=255."
            )


def _supported_obs_space(space: gym.Space) -> bool:
    if isinstance(space, gym.spaces.Box):
        return True
    if isinstance(space, gym.spaces.Dict):
        return len(space.spaces) > 0 and all(_supported_obs_space(s) for s in space.spaces.values())
    return False


def _boxes(space: gym.Space, path: str = "") -> list[tuple[str, gym.spaces.Box]]:
    if isinstance(space, gym.spaces.Box):
        return [(path, space)]
    if isinstance(space, gym.spaces.Dict):
        return [b for k, s in space.spaces.items() for b in _boxes(s, f"{path}[{k!r}]")]
    return []


def _check_action_space(space: gym.Space) -> None:
    discretes = []
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        discretes = [space]
    elif (
        isinstance(space, gym.spaces.Tuple)
        and space.spaces
        and all(isinstance(s, (gym.spaces.Discrete, gym.spaces.Box)) for s in space.spaces)
    ):  # Discrete heads, or Discrete and Box heads mixed (Doom's continuous turning)
        discretes = [s for s in space.spaces if isinstance(s, gym.spaces.Discrete)]
    elif not isinstance(space, gym.spaces.Box):
        raise EnvError(
            f"action_space {space} is not supported: surge's policies output {SUPPORTED_ACTIONS}. "
            "Fix: convert the actions in a gymnasium.ActionWrapper"
            + (
                " (a Dict of Discrete becomes a Tuple of Discrete, a Dict of Box one flat Box)."
                if isinstance(space, gym.spaces.Dict)
                else "."
            )
        )
    for d in discretes:
        if np.any(np.asarray(d.start) != 0):
            raise EnvError(
                f"action_space {space} has start={d.start}: surge samples actions from 0 to n-1. Fix: use "
                "start=0 and add the offset inside the env's step()."
            )


def _conv_min_size(layers: list[tuple[int, int, int]]) -> int:
    """The smallest height (and width) a stack of (channels, kernel, stride) convolutions accepts."""
    size = 1
    for _, k, s in reversed(layers):
        size = (size - 1) * s + k
    return size


def _conv_out(size: int, layers: list[tuple[int, int, int]]) -> int:
    for _, k, s in layers:
        size = (size - k) // s + 1
    return size


def _too_small(shape: tuple[int, ...], subtype: str) -> bool:
    """True when a (C, H, W) image leaves nothing after the conv layers of `subtype` (an unknown
    subtype counts as convnet_simple, the encoder's fallback)."""
    from surge.models.encoders import CONV_LAYERS

    layers = CONV_LAYERS.get(subtype, CONV_LAYERS["convnet_simple"])
    return min(_conv_out(shape[1], layers), _conv_out(shape[2], layers)) < 1


def check_env_spaces(
    cfg: Any,
    observation_space: gym.Space,
    action_space: gym.Space,
    num_agents: int = 1,
    memory: bool = True,
    replay_bytes: int = 0,
) -> None:
    """Refuses, before anything is allocated, an env whose spaces this config cannot train on:
    observation spaces the encoders do not take (a Dict entry that is not a Box is named), action
    spaces the policy heads do not output (Dict), images in height-width-channel order or too small
    for the conv encoder of `cfg.encoder_subtype`, and buffers and model larger than this machine's
    memory (`surge.app.memory_estimate.estimate_memory` with the real observation size).

    Args:
        cfg: the run's config (encoder_type, encoder_subtype, encoder_custom, sizes).
        observation_space, action_space: one agent's spaces, as the env reports them.
        num_agents: agents per env object.
        memory: also check the memory estimate (False: the spaces only, as `parse_cfg` does for
            an env whose spaces it read, before the number of agents is known).
        replay_bytes: what the algorithm's replay buffers hold (`Algorithm.replay_bytes`), added to
            the estimate.

    Raises:
        EnvError: a space this config cannot handle; the message names the observation key and
            says what to pass (a flag or a wrapper) to fix it.
        ConfigError: the run would need more memory than this machine has (see `check_memory`).
    """
    from surge.app.memory_estimate import check_memory, estimate_memory
    from surge.envs.action_masks import check_mask_space
    from surge.envs.wrappers import is_channels_last
    from surge.models.encoders import CONV_LAYERS

    custom = bool(getattr(cfg, "encoder_custom", ""))
    if not custom:
        _refuse_unsupported_obs(observation_space, cfg)
    _check_action_space(action_space)
    from surge.learning.pg_checks import check_action_options

    check_action_options(cfg, action_space)
    check_mask_space(observation_space, action_space)
    boxes = _boxes(observation_space)
    images = cfg.encoder_type != "mlp" and not custom
    for path, box in boxes:
        shape = tuple(box.shape)
        if not images or len(shape) != 3:
            continue
        where = f"observation{path}"
        if is_channels_last(shape):
            transposed = (shape[2], shape[0], shape[1])
            # the image the conv encoder will get after ChannelsFirst: too small for it, resnet
            small = cfg.encoder_type == "conv" and _too_small(transposed, cfg.encoder_subtype)
            raise EnvError(
                f"{where} has shape {shape}, height-width-channel order; surge's conv encoders take "
                f"channels first (C, H, W). Fix: `{_with_wrappers(cfg, 'surge.envs.wrappers:ChannelsFirst')}"
                + (" --encoder_type=resnet`" if small else "`")
                + (
                    f" (ChannelsFirst transposes it; a {shape[0]}x{shape[1]} image is too small for "
                    f"--encoder_subtype={cfg.encoder_subtype}, resnet takes any size)"
                    if small
                    else " (ChannelsFirst transposes it)"
                )
                + ", or `--encoder_type=mlp` to flatten the image into an MLP (fine for small images)."
            )
        if cfg.encoder_type == "conv":
            subtype = cfg.encoder_subtype if cfg.encoder_subtype in CONV_LAYERS else "convnet_simple"
            layers = CONV_LAYERS[subtype]
            if _too_small(shape, subtype):
                need = _conv_min_size(layers)
                fits = [s for s, ls in CONV_LAYERS.items() if min(shape[1:]) >= _conv_min_size(ls)]
                raise EnvError(
                    f"{where} is a {shape[1]}x{shape[2]} image (shape {shape}), smaller than the "
                    f"{need}x{need} that --encoder_subtype={subtype} needs. Fix: `--encoder_type=resnet` "
                    "(any size)"
                    + (f", `--encoder_subtype={fits[0]}`" if fits else "")
                    + ", `--encoder_type=mlp` (flattens the image), or a larger image (e.g. gymnasium's "
                    "ResizeObservation in a wrapper of yours)."
                )
    if not memory:
        return
    obs_bytes = sum(int(np.prod(b.shape)) * np.dtype(b.dtype).itemsize for _, b in boxes) or 1
    vector = boxes and all(len(b.shape) <= 1 for _, b in boxes) and len(boxes) == 1
    obs_floats = int(np.prod(boxes[0][1].shape)) if vector else None
    if cfg.encoder_type == "mlp" and len(boxes) == 1 and not custom:
        obs_floats = int(np.prod(boxes[0][1].shape))
    parts = estimate_memory(cfg, obs_bytes=obs_bytes, obs_floats=obs_floats, num_agents=num_agents)
    if replay_bytes:
        parts.append(("algo", replay_bytes, f"the replay buffer(s) of --algo={cfg.algo}"))
    check_memory(parts)


def _with_wrappers(cfg: Any, *added: str) -> str:
    """The `--env_wrappers` flag that keeps the run's own wrappers (innermost first) and adds `added`."""
    given = [str(w) for w in (getattr(cfg, "env_wrappers", None) or [])]
    return "--env_wrappers " + " ".join([*given, *added])


def _space_name(space: gym.Space) -> str:
    cls = type(space)
    if cls.__module__.startswith("gymnasium."):
        return cls.__name__
    return f"{cls.__name__} (a {cls.__module__} space)"


_CUSTOM_ENCODER = "register a custom encoder (surge.models.register_encoder, --encoder_custom)"


def _refuse_unsupported_obs(space: gym.Space, cfg: Any = None) -> None:
    """EnvError for an observation space that is neither a Box nor a Dict of them, naming the parts
    that are not, and a fix that works when followed: the `--env_wrappers` command (the run's own
    wrappers kept) in backticks, when gymnasium can flatten the space; a custom encoder otherwise.
    """
    if _supported_obs_space(space):
        return
    if isinstance(space, gym.spaces.Dict) and space.spaces:
        unflat = unflattenable_entries(space)
        if unflat:
            named = ", ".join(f"observation_space{path} is {_space_name(s)}" for path, s in unflat)
            keys = ", ".join(path for path, _ in unflat)
            left = len(unflat) < _num_leaves(space)
            raise EnvError(
                f"{named}, which cannot be flattened into numbers (gymnasium's FlattenObservation "
                "fails on it), and surge's encoders take Box entries only. Fix: "
                + (
                    f"`{_with_wrappers(cfg, 'surge.envs.wrappers:DropUnflattenable', 'FlattenObservation')}` "
                    f"(drops {keys}, then the other entries become one vector, Discrete ones one-hot), "
                    f"or {_CUSTOM_ENCODER} that reads {keys}."
                    if left
                    else f"{_CUSTOM_ENCODER}."
                )
            )
        bad = [(path, s) for path, s in _leaves(space) if not isinstance(s, gym.spaces.Box)]
        named = ", ".join(f"observation_space{path} is {s}" for path, s in bad)
        raise EnvError(
            f"{named}: surge's encoders take Box entries. Fix: "
            f"`{_with_wrappers(cfg, 'FlattenObservation')}` (the whole Dict becomes one vector, "
            "Discrete entries one-hot), or a wrapper of yours that turns "
            f"{', '.join(path for path, _ in bad)} into a Box (e.g. one-hot)."
        )
    if not isinstance(space, gym.spaces.Dict) and is_flattenable(space):
        raise EnvError(
            f"observation_space {space} is not supported: surge's encoders take {SUPPORTED_OBS}. Fix: "
            f"`{_with_wrappers(cfg, 'FlattenObservation')}` (it becomes one vector, Discrete one-hot), "
            f"or {_CUSTOM_ENCODER}."
        )
    raise EnvError(
        f"observation_space {space} is not supported: surge's encoders take {SUPPORTED_OBS}, and "
        f"{_space_name(space)} cannot be flattened into numbers (gymnasium's FlattenObservation fails on "
        f"it). Fix: {_CUSTOM_ENCODER}, or a wrapper of yours that turns the observations into a Box."
    )


def _leaves(space: gym.Space, path: str = "") -> list[tuple[str, gym.Space]]:
    """`(path, space)` of each entry of a Dict that is not itself a Dict, at any depth."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for k, s in space.spaces.items() for leaf in _leaves(s, f"{path}[{k!r}]")]
    return [(path, space)]


def _num_leaves(space: gym.Space) -> int:
    return len(_leaves(space))


# --------------------------------------------------------------------------------------------- values


def _shape_dtype(value: Any) -> str:
    arr = np.asarray(value)
    return f"shape {arr.shape} and dtype {arr.dtype}"


def _check_obs(obs: Any, space: gym.Space, where: str, found: Findings, path: str = "") -> None:
    """Raises EnvError when `obs` does not fit `space` (names expected vs actual shape/dtype); adds
    to `found` what training tolerates (a list, values out of bounds) as `observation{path}` (the
    Dict key, if any) seen at `where`."""
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(obs, dict):
            raise EnvError(
                f"{where} returned an observation of type {type(obs).__name__}, but observation_space is a "
                f"Dict: return a dict with the keys {list(space.spaces)}."
            )
        missing = [k for k in space.spaces if k not in obs]
        extra = [k for k in obs if k not in space.spaces]
        if missing or extra:
            raise EnvError(
                f"{where} returned an observation dict with keys {list(obs)}, but observation_space has "
                f"keys {list(space.spaces)} (missing: {missing}, unexpected: {extra})."
            )
        for key, sub in space.spaces.items():
            _check_obs(obs[key], sub, f"{where}[{key!r}]", found, f"{path}[{key!r}]")
        return
    if not isinstance(space, gym.spaces.Box):
        if obs not in space:
            raise EnvError(
                f"{where} returned an observation {obs!r} that is not in observation_space {space}."
            )
        return
    if not isinstance(obs, np.ndarray):
        try:
            arr = np.asarray(obs)
        except Exception as e:  # noqa: BLE001
            raise EnvError(
                f"{where} returned an observation of type {type(obs).__name__}, which is not an array: "
                f"return a numpy array of shape {space.shape} and dtype {space.dtype}."
            ) from e
        if arr.dtype == object:
            raise EnvError(
                f"{where} returned an observation of type {type(obs).__name__} that numpy cannot turn into "
                f"an array of numbers: return a numpy array of shape {space.shape} and dtype {space.dtype}."
            )
        found.add(
            f"observation{path} is a {type(obs).__name__}, not a numpy array: return "
            f"np.asarray(obs, dtype=np.{space.dtype}) to avoid a conversion per step",
            where,
            NOT_AN_ARRAY,
        )
        obs = arr.astype(space.dtype) if arr.shape == space.shape else arr
    if obs.shape != space.shape:
        raise EnvError(
            f"{where} returned an observation of shape {obs.shape}, but observation_space has shape "
            f"{space.shape}. Fix: return arrays of shape {space.shape}, or declare observation_space with "
            f"shape={obs.shape}."
        )
    if obs.dtype != space.dtype:
        raise EnvError(
            f"{where} returned an observation of dtype {obs.dtype}, but observation_space has dtype "
            f"{space.dtype}. Fix: return obs.astype(np.{space.dtype}), or declare observation_space with "
            f"dtype=np.{obs.dtype}."
        )
    if np.issubdtype(obs.dtype, np.floating) and not np.all(np.isfinite(obs)):
        raise EnvError(f"{where} returned an observation containing NaN or inf: observations must be finite.")
    if np.issubdtype(obs.dtype, np.number) and (np.any(obs < space.low) or np.any(obs > space.high)):
        # surge's models do not read the bounds: training goes on, but the space misdescribes the data
        found.add(
            f"observation{path} is outside the bounds of observation_space (low {space.low.min()}, "
            f"high {space.high.max()}); widen the bounds or clip the observation",
            where,
            OUT_OF_BOUNDS,
        )


def _check_reward(reward: Any, where: str) -> None:
    if isinstance(reward, (bool, np.bool_)) or not (
        isinstance(reward, (int, float, np.integer, np.floating))
        or (isinstance(reward, np.ndarray) and reward.shape == () and np.issubdtype(reward.dtype, np.number))
    ):
        raise EnvError(
            f"{where} returned a reward of type {type(reward).__name__} ({reward!r}): the reward must be one "
            "number (a Python float or a numpy scalar) for each agent."
        )
    if not math.isfinite(float(reward)):
        raise EnvError(
            f"{where} returned a reward of {float(reward)}: rewards must be finite numbers (not NaN or inf). "
            "Look for a division by zero or a log of 0 in the reward computation."
        )


def _check_flag(value: Any, name: str, where: str) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise EnvError(
            f"{where} returned {name}={value!r} of type {type(value).__name__}: it must be a bool. "
            f"Fix: return bool({name})."
        )


def _check_info(info: Any, where: str) -> None:
    if not isinstance(info, dict):
        raise EnvError(
            f"{where} returned an info of type {type(info).__name__}: it must be a dict "
            "(an empty dict {} is fine)."
        )


def _call(what: str, fn: Callable[[], Any], old_api_error: EnvError | None = None) -> Any:
    """Calls the env; an exception it raises becomes an EnvError naming the call.

    `old_api_error` is raised instead when a wrapper (gym.make's, RecordEpisodeStatistics) failed
    to unpack the 4 values of an old-API step into 5.
    """
    try:
        return fn()
    except SurgeError:
        raise
    except Exception as e:
        if old_api_error is not None and isinstance(e, ValueError) and "expected 5, got 4" in str(e):
            raise old_api_error from e
        raise EnvError(f"{what} raised {type(e).__name__}: {e}") from e


def _old_step_api_error(where: str, multi_agent: bool) -> EnvError:
    if multi_agent:
        return EnvError(
            f"{where} returned 4 values (obs, rewards, dones, infos), the old gym API. surge's "
            "multi-agent step returns 5 lists: (obs, rewards, terminated, truncated, infos). "
            "Fix: split dones into terminated (the episode really ended) and truncated (cut short "
            "by a time limit)."
        )
    return EnvError(
        f"{where} returned 4 values (obs, reward, done, info), the old gym API. gymnasium's step "
        "returns 5: (obs, reward, terminated, truncated, info). Fix: split done into terminated "
        "(the episode really ended: goal reached, agent died) and truncated (cut short, e.g. by a "
        "time limit), and return both."
    )


def _check_reset_signature(env: Any) -> None:
    try:
        params = inspect.signature(env.reset).parameters
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    if "seed" not in params and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        raise EnvError(
            "reset() takes no seed argument (old gym API). Fix: define "
            "`def reset(self, *, seed=None, options=None)` and call `super().reset(seed=seed)` first; "
            "it returns (obs, info)."
        )


def _looks_like_step_of_old_api(result: Any) -> bool:
    return isinstance(result, (tuple, list)) and len(result) == 4


# --------------------------------------------------------------------------------------------- single agent


def _check_single_agent(env: Any, cfg: Any, num_steps: int, found: Findings) -> None:
    if not isinstance(env, gym.Env):
        base = " ".join(f"{c.__module__}.{c.__name__}" for c in type(env).__mro__[1:-1])
        old_gym = "gym.core" in base
        raise EnvError(
            f"the env is a {type(env).__name__}, which is neither a gymnasium.Env nor a multi-agent env. "
            "Fix: "
            + (
                "it subclasses the old `gym` package; port it to gymnasium (import gymnasium as gym). "
                if old_gym
                else "subclass gymnasium.Env, or, for several agents, give it num_agents and list-valued "
                "reset/step (see surge.envs.multi_agent). "
            )
            + GYMNASIUM_API_HINT
        )
    _check_spaces(env, cfg, found)
    obs_space = env.observation_space
    _check_reset_signature(env)

    def reset(where: str, **kwargs: Any) -> Any:
        result = _call(where, lambda: env.reset(**kwargs))
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
            obs, info = result
        elif isinstance(result, tuple) and len(result) == 2:
            raise EnvError(
                f"{where} returned (obs, info) with an info of type {type(result[1]).__name__}: info must be "
                "a dict (an empty dict {} is fine)."
            )
        elif isinstance(result, tuple):
            raise EnvError(
                f"{where} returned a tuple of {len(result)} items; gymnasium's reset returns a pair "
                "(obs, info)."
            )
        else:
            raise EnvError(
                f"{where} returned only the observation ({_describe(result)}), the old gym API. gymnasium's "
                "reset returns a pair (obs, info). Fix: `return obs, {}` (or `return obs, info`)."
            )
        _check_obs(obs, obs_space, where, found)
        return obs, info

    obs, info = reset("env.reset(seed=0)", seed=0)
    env.action_space.seed(0)
    masked = has_action_mask(obs_space)
    for i in range(num_steps):
        where = f"env.step() (step {i})"
        action = sample_legal(env.action_space, obs[MASK_KEY]) if masked else env.action_space.sample()
        old_api = _old_step_api_error(where, multi_agent=False)
        result = _call(where, lambda a=action: env.step(a), old_api)
        if _looks_like_step_of_old_api(result):
            raise old_api
        if not isinstance(result, (tuple, list)) or len(result) != 5:
            n = len(result) if isinstance(result, (tuple, list)) else None
            raise EnvError(
                f"{where} returned {_describe(result) if n is None else f'{n} values'}; it must return a "
                "tuple of 5: (obs, reward, terminated, truncated, info)."
            )
        obs, reward, terminated, truncated, info = result
        _check_obs(obs, obs_space, where, found)
        _check_reward(reward, where)
        _check_flag(terminated, "terminated", where)
        _check_flag(truncated, "truncated", where)
        _check_info(info, where)
        if not masked and isinstance(info.get(MASK_KEY), (np.ndarray, list, tuple)):
            found.append(INFO_MASK_HINT)
        if terminated or truncated:
            obs, info = reset(f"env.reset() (after step {i})")

    _run_gymnasium_checks(env, found)


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {_shape_dtype(value)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"


# gymnasium's checks: (name in gymnasium.utils.env_checker, soft). Soft ones are about seeding,
# determinism and buffer reuse, which surge does not rely on: their failures become warnings.
_GYM_CHECKS: tuple[tuple[str, bool], ...] = (
    ("check_reset_return_type", False),
    ("check_reset_seed_determinism", True),
    ("check_reset_options", True),
    ("env_reset_passive_checker", False),
    ("env_step_passive_checker", False),
    ("check_step_determinism", True),
    ("check_returned_data_not_reused", True),
)

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _clean(message: str) -> str:
    message = _ANSI.sub("", str(message)).strip()
    return message[len("WARN: ") :] if message.startswith("WARN: ") else message


def _run_gymnasium_checks(env: gym.Env, found: Findings) -> None:
    from gymnasium.utils import env_checker

    for name, soft in _GYM_CHECKS:
        fn = getattr(env_checker, name, None)
        if fn is None:  # another gymnasium version
            continue
        args: tuple = (env,)
        if name == "env_step_passive_checker":
            action = env.action_space.sample()
            if has_action_mask(env.observation_space):  # a legal action, from a state it is legal in
                obs, _ = env.reset(seed=0)
                action = sample_legal(env.action_space, obs[MASK_KEY])
            args = (env, action)
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - gymnasium raises AssertionError, Error, TypeError...
            message = f"gymnasium's env checker ({name}): {_clean(str(e)) or type(e).__name__}"
            if found.already_named(message):  # e.g. a reset observation out of bounds: trains, named once
                continue
            if soft:
                found.append(message)
            else:
                raise EnvError(message) from e


# --------------------------------------------------------------------------------------------- multi agent


def _check_list(value: Any, what: str, n: int, where: str) -> None:
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__"):
        raise EnvError(
            f"{where} returned {what} as a {type(value).__name__}; a multi-agent env returns a list with one "
            f"item per agent (num_agents={n})."
        )
    if len(value) != n:
        raise EnvError(
            f"{where} returned {len(value)} {what} but num_agents is {n}: return a list with one item "
            "per agent."
        )


def _check_multi_agent(
    env: Any, cfg: Any, num_steps: int, found: Findings, legal_counts: list[int] | None = None
) -> None:
    """Resets and steps a multi-agent env `num_steps` times (legal random actions under its
    action masks; `legal_counts` receives the number of legal actions of each acting agent step)."""
    n = getattr(env, "num_agents", None)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise EnvError(f"num_agents is {n!r}: a multi-agent env needs num_agents, an int >= 1.")
    n = int(n)
    _check_spaces(env, cfg, found)
    obs_space = env.observation_space
    _check_reset_signature(env)

    where = "env.reset(seed=0)"
    result = _call(where, lambda: env.reset(seed=0))
    if not (isinstance(result, tuple) and len(result) == 2):
        raise EnvError(
            f"{where} returned {_describe(result)}; a multi-agent reset returns a pair "
            "(observations, infos), each a list with one item per agent. If it returns only the "
            "observations (old gym API), return `obs, [{} for _ in range(self.num_agents)]`."
        )
    obs, infos = result
    _check_list(obs, "observations", n, where)
    _check_list(infos, "infos", n, where)
    for i in range(n):
        _check_obs(obs[i], obs_space, f"{where}, agent {i}", found)
        _check_info(infos[i], f"{where}, agent {i}")

    env.action_space.seed(0)
    masked = has_action_mask(obs_space)
    if masked:
        check_mask_space(obs_space, env.action_space)
    for t in range(num_steps):
        where = f"env.step() (step {t})"
        if masked:
            actions = [sample_legal(env.action_space, o[MASK_KEY]) for o in obs]
            if legal_counts is not None:
                legal_counts.extend(
                    int(np.count_nonzero(o[MASK_KEY]))
                    for o, i in zip(obs, infos, strict=True)
                    if i.get("is_active", True) is not False
                )
        else:
            actions = [env.action_space.sample() for _ in range(n)]
        old_api = _old_step_api_error(where, multi_agent=True)
        result = _call(where, lambda a=actions: env.step(a), old_api)
        if _looks_like_step_of_old_api(result):
            raise old_api
        if not isinstance(result, (tuple, list)) or len(result) != 5:
            raise EnvError(
                f"{where} returned {_describe(result)}; it must return 5 lists: "
                "(obs, rewards, terminated, truncated, infos), one item per agent in each."
            )
        obs, rewards, terminated, truncated, infos = result
        names = ("observations", "rewards", "terminated flags", "truncated flags", "infos")
        for items, what in zip(result, names, strict=True):
            _check_list(items, what, n, where)
        for i in range(n):
            at = f"{where}, agent {i}"
            _check_obs(obs[i], obs_space, at, found)
            _check_reward(rewards[i], at)
            _check_flag(terminated[i], "terminated", at)
            _check_flag(truncated[i], "truncated", at)
            _check_info(infos[i], at)
            active = infos[i].get("is_active", True)
            if not isinstance(active, (bool, np.bool_)):
                raise EnvError(f"{at} returned info['is_active']={active!r}: it must be a bool.")
            if not masked and isinstance(infos[i].get(MASK_KEY), (np.ndarray, list, tuple)):
                found.append(INFO_MASK_HINT)


INFO_MASK_HINT = (
    "the env reports info['action_mask'], which surge reads from the observation: pass "
    "--env_wrappers=surge.envs.action_masks:InfoActionMask so that the policy keeps to the legal actions."
)


def _env_notes(env: Any, legal_counts: list[int]) -> list[str]:
    """What `surge check-env` reports of an env besides problems: its PettingZoo API and agents,
    and its action masks with the legal actions per acting agent step seen (`legal_counts`)."""
    from surge.envs.pettingzoo_family import PettingZooAsMultiAgent

    out = []
    if isinstance(env, PettingZooAsMultiAgent):
        api = "Parallel" if env.parallel else "AEC (turn-based: only the agent to move is active)"
        out.append(f"PettingZoo {api} env with {env.num_agents} agent slot(s): {', '.join(env.agents)}.")
    space = env.observation_space
    if has_action_mask(space):
        width = space.spaces[MASK_KEY].shape[0]
        seen = legal_counts
        legal = (
            f"; legal actions per acting agent step: min {min(seen)}, mean {np.mean(seen):.1f}, max {max(seen)}"
            if seen
            else ""
        )
        out.append(
            f"action masks: observation['action_mask'], {width} entries for {env.action_space} "
            f"(stripped from the encoder's input, applied to the policy's logits){legal}."
        )
    return out


# --------------------------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    """`surge check-env --env=NAME [--num_steps=N] [--FIELD=VALUE ...]`: makes and checks an env.

    FIELD is any config field of the env (`--env_frameskip=4`, `--atari_episodic_life=False`).
    Prints `OK ...` (with the number of warnings) and each distinct warning once, with how often
    it was seen, to stdout (exit code 0): problems that training tolerates. Prints `ERROR: <what is
    wrong>` to stderr (exit code 1) for the first problem that breaks training.

    Returns:
        The exit code: 0 when the env passes, 1 otherwise.
    """
    parser = argparse.ArgumentParser(
        prog="surge check-env", description="Check that an env follows the API surge needs."
    )
    parser.add_argument("--env", required=True, help="Env name (atari_breakout, cartpole, a gymnasium id).")
    parser.add_argument("--num_steps", type=int, default=50, help="Random steps to take (default 50).")
    if "--version" in (argv if argv is not None else sys.argv[1:]):
        from surge.cfg.cli import version_text

        print(version_text())
        return 0
    args, rest = parser.parse_known_args(argv)
    try:
        cfg = config_for_env(args.env, rest)
        notes: list[str] = []
        found = check_env(args.env, cfg=cfg, num_steps=args.num_steps, notes=notes)
    except SurgeError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    counted = f", with {len(found)} warning(s) below" if found else ""
    print(f"OK: env {args.env!r} passed the checks ({args.num_steps} random steps){counted}.")
    for note in notes:
        print(f"note: {note}")
    for w in found:
        print(f"warning: {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
