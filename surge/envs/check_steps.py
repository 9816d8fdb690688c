"""The stepping half of `surge check-env`: an env reset and stepped with random (legal) actions,
single-agent (gymnasium's API, then gymnasium's own checker) or multi-agent (surge's list-valued
contract, `surge.envs.multi_agent`); each observation, reward, flag and info it returns is checked
against its spaces and the API, with a fix in the message.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from surge.cfg.config import Config
from surge.envs.action_masks import MASK_KEY, check_mask_space, has_action_mask, sample_legal
from surge.envs.batched import BatchedInfo
from surge.envs.check_findings import NOT_AN_ARRAY, OUT_OF_BOUNDS, Findings, clean_gymnasium_text
from surge.envs.check_spaces import check_declared_spaces
from surge.errors import EnvError, SurgeError

GYMNASIUM_API_HINT = (
    "See https://gymnasium.farama.org/introduction/create_custom_env/ for the gymnasium API, or wrap "
    "an old gym env with shimmy's GymV26CompatibilityV0."
)

INFO_MASK_HINT = (
    "the env reports info['action_mask'], which surge reads from the observation: pass "
    "--env_wrappers=surge.envs.action_masks:InfoActionMask so that the policy keeps to the legal actions."
)


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


def check_single_agent(env: Any, cfg: Config | None, num_steps: int, found: Findings) -> None:
    """Resets and steps a `gymnasium.Env` `num_steps` times (legal random actions under its action
    masks), then runs gymnasium's own checker; adds to `found` what trains but looks unintended.

    Raises:
        EnvError: the env is not a `gymnasium.Env`, breaks gymnasium's API (the old 4-value step, a
            reset without `seed`), or returns data that does not match its spaces.
    """
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
    check_declared_spaces(env, cfg, found)
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
        result = _call(where, functools.partial(env.step, action), old_api)
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
            message = f"gymnasium's env checker ({name}): {clean_gymnasium_text(str(e)) or type(e).__name__}"
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


def _step_infos(infos: Any, n: int, batched: bool, where: str) -> Any:
    """A step's infos as one dict per agent: a batched env (`is_batched`) returns one
    `BatchedInfo` for all its envs (its `inactive`: `[n]` bool or None), which becomes each agent's
    `is_active`; any other multi-agent env a list of `n` dicts."""
    if batched and isinstance(infos, BatchedInfo):
        inactive = infos.inactive
        if inactive is None:
            return [{} for _ in range(n)]
        if np.shape(inactive) != (n,):
            raise EnvError(
                f"{where} returned a BatchedInfo whose inactive has shape {np.shape(inactive)}; it must "
                f"be None or [num_agents] = [{n}] bools."
            )
        return [{"is_active": not bool(x)} for x in inactive]
    _check_list(infos, "infos", n, where)
    return infos


def check_multi_agent(
    env: Any, cfg: Config | None, num_steps: int, found: Findings, legal_counts: list[int] | None = None
) -> None:
    """Resets and steps a multi-agent env `num_steps` times (legal random actions under its
    action masks; `legal_counts` receives the number of legal actions of each acting agent step)."""
    n = getattr(env, "num_agents", None)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise EnvError(f"num_agents is {n!r}: a multi-agent env needs num_agents, an int >= 1.")
    n = int(n)
    batched = bool(getattr(env, "is_batched", False))
    check_declared_spaces(env, cfg, found)
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
        result = _call(where, functools.partial(env.step, actions), old_api)
        if _looks_like_step_of_old_api(result):
            raise old_api
        if not isinstance(result, (tuple, list)) or len(result) != 5:
            raise EnvError(
                f"{where} returned {_describe(result)}; it must return 5 lists: "
                "(obs, rewards, terminated, truncated, infos), one item per agent in each."
            )
        obs, rewards, terminated, truncated, infos = result
        names = ("observations", "rewards", "terminated flags", "truncated flags")
        for items, what in zip(result[:4], names, strict=True):
            _check_list(items, what, n, where)
        infos = _step_infos(infos, n, batched, where)
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
