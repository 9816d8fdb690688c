"""PettingZoo envs as the `pettingzoo_` family: `--env=pettingzoo_classic.connect_four_v3` makes
`pettingzoo.classic.connect_four_v3`, `--env=pettingzoo_butterfly.pistonball_v6` the pistonball env.

`PettingZooAsMultiAgent` adapts both of PettingZoo's APIs to surge's multi-agent contract
(`surge.envs.multi_agent`):

- one fixed slot per agent of `possible_agents`; an agent that is absent (not yet spawned, already
  done, or, in an AEC env, not the one to move) is inactive for that step (`infos[i]["is_active"]`
  False), its reward 0 and its observation zeros (or the env's `observe` while it is alive);
- Parallel envs (`parallel_env`): every present agent acts each step;
- AEC envs (`env`, turn-based): one surge step is one `env.step` of `agent_selection`; the other
  agents' actions are ignored. Each agent's reward of that step (`env.rewards`, which PettingZoo's
  `last()` sums between the agent's turns) is delivered to its own slot at that step, so the
  loser of connect four gets its -1 at the winner's move; dead agents are stepped with `None` as
  the AEC protocol asks;
- each agent's `terminated` and `truncated` are kept apart and reported once, at the step where
  that agent ends, with `infos[i]["episode"]`; when no agent is left the env is reset (auto-reset)
  and every slot gets the new episode's first observation;
- observation dicts with `action_mask` are passed on (see `surge.envs.action_masks`); an inactive
  agent's mask allows every action (its action is ignored), as a mask with no legal entry has no
  distribution;
- images in height-width-channel order become channels-first, as surge's conv encoders take them.

The agents must share one observation space and one action space (PettingZoo's SuperSuit pads them
otherwise).
"""

from __future__ import annotations

import importlib
import json
import warnings
from dataclasses import dataclass
from typing import Any, cast

import gymnasium as gym
import numpy as np

from surge.cfg.config import Config, family_params, param
from surge.envs.action_masks import MASK_KEY, has_action_mask
from surge.envs.classic import VECTOR_OBS_DEFAULTS
from surge.envs.registry import register_env_family
from surge.envs.wrappers import is_channels_last
from surge.errors import ConfigError, EnvError

PREFIX = "pettingzoo_"


@dataclass
class PettingZooParams:
    """Flags of the `pettingzoo_` family."""

    pettingzoo_api: str = param(
        "auto", "Which API to use: aec, parallel, or auto (parallel_env when the module has one, else env)."
    )
    pettingzoo_kwargs: str = param(
        "", "JSON object of keyword arguments for the env, e.g. '{\"n_pistons\": 4}'."
    )

    def validate(self) -> None:
        """Raises `ConfigError` for an unknown API or kwargs that are not a JSON object."""
        if self.pettingzoo_api not in ("auto", "aec", "parallel"):
            raise ConfigError(
                "pettingzoo_api",
                f"must be auto, aec or parallel, got {self.pettingzoo_api!r}.",
                "e.g. --pettingzoo_api=aec.",
            )
        env_kwargs(self.pettingzoo_kwargs)


def env_kwargs(raw: str) -> dict[str, Any]:
    """The `--pettingzoo_kwargs` JSON object ({} when empty).

    Raises:
        ConfigError: not valid JSON, or not an object.
    """
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ConfigError(
            "pettingzoo_kwargs", f"is not valid JSON: {e}.", "e.g. --pettingzoo_kwargs='{\"n_pistons\": 4}'."
        ) from None
    if not isinstance(value, dict):
        raise ConfigError(
            "pettingzoo_kwargs", f"must be a JSON object, got {raw!r}.", "e.g. '{\"n_pistons\": 4}'."
        )
    return value


def module_name(full_env_name: str) -> str:
    """`pettingzoo_classic.connect_four_v3` -> `pettingzoo.classic.connect_four_v3`."""
    return "pettingzoo." + full_env_name[len(PREFIX) :]


def check_pettingzoo_name(full_env_name: str) -> None:
    """Refuses a name that is not `pettingzoo_<group>.<env>_v<N>` (cheap: no import).

    Raises:
        ConfigError: the name has no group or env part.
    """
    group, _, name = full_env_name[len(PREFIX) :].partition(".")
    if not group or not name:
        raise ConfigError(
            "env",
            f"{full_env_name!r} is not pettingzoo_<group>.<env>.",
            "e.g. --env=pettingzoo_classic.connect_four_v3 or --env=pettingzoo_butterfly.pistonball_v6.",
        )


def _zeros(space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Dict):
        return {k: _zeros(s) for k, s in space.spaces.items()}
    return np.zeros(space.shape, space.dtype)


class PettingZooAsMultiAgent:
    """A PettingZoo AEC or Parallel env under surge's multi-agent contract (module docstring).

    Args:
        env: a `pettingzoo.AECEnv` or `pettingzoo.ParallelEnv`.
    Raises:
        EnvError: the agents' observation or action spaces differ.
    """

    is_multiagent = True

    def __init__(self, env: Any):
        from pettingzoo.utils.env import ParallelEnv

        self.env = env
        self.parallel = isinstance(env, ParallelEnv)
        self.agents = list(env.possible_agents)
        self.num_agents = len(self.agents)
        spaces = {str(env.observation_space(a)) for a in self.agents}
        actions = {str(env.action_space(a)) for a in self.agents}
        if len(spaces) > 1 or len(actions) > 1:
            raise EnvError(
                f"the agents of {type(env.unwrapped).__name__} have different observation or action spaces "
                f"({sorted(spaces | actions)}); surge's policies need one of each: pad them (SuperSuit's "
                "pad_observations_v0 / pad_action_space_v0) in a family of your own"
            )
        space = env.observation_space(self.agents[0])
        self._transpose = self._image_keys(space)
        self.observation_space = self._out_space(space)
        self.action_space = env.action_space(self.agents[0])
        self._masked = has_action_mask(self.observation_space)
        self._zero_obs = _zeros(self.observation_space)
        self.render_mode = getattr(env, "render_mode", None)
        self._returns = np.zeros(self.num_agents)
        self._lengths = np.zeros(self.num_agents, dtype=np.int64)
        self._alive = np.zeros(self.num_agents, dtype=bool)  # present and not yet done this episode
        self._ended = np.zeros(self.num_agents, dtype=bool)  # done this episode (never alive again)

    # --- spaces -------------------------------------------------------------------------------
    @staticmethod
    def _image_keys(space: gym.Space) -> set[str | None]:
        """Keys (None: the space itself) of height-width-channel uint8 images to transpose."""
        if isinstance(space, gym.spaces.Dict):
            return {k for k, s in space.spaces.items() if PettingZooAsMultiAgent._is_hwc(s)}
        return {None} if PettingZooAsMultiAgent._is_hwc(space) else set()

    @staticmethod
    def _is_hwc(space: gym.Space) -> bool:
        return (
            isinstance(space, gym.spaces.Box)
            and len(space.shape) == 3
            and space.dtype == np.uint8
            and is_channels_last(tuple(space.shape))
        )

    def _out_space(self, space: gym.Space) -> gym.Space:
        def chw(box: gym.spaces.Box) -> gym.spaces.Box:
            return gym.spaces.Box(np.moveaxis(box.low, -1, 0), np.moveaxis(box.high, -1, 0), dtype=box.dtype)

        if isinstance(space, gym.spaces.Dict):
            return gym.spaces.Dict(
                # the keys of _image_keys are Box entries
                {
                    k: chw(cast(gym.spaces.Box, s)) if k in self._transpose else s
                    for k, s in space.spaces.items()
                }
            )
        return chw(cast(gym.spaces.Box, space)) if None in self._transpose else space

    def _convert(self, obs: Any) -> Any:
        if not self._transpose:
            return obs
        if isinstance(obs, dict):
            return {k: np.moveaxis(v, -1, 0) if k in self._transpose else v for k, v in obs.items()}
        return np.moveaxis(obs, -1, 0)

    def _obs(self, obs: Any, legal: bool) -> Any:
        """The env's observation for a slot; an agent that cannot act gets a mask allowing all."""
        obs = self._convert(obs)
        if self._masked and not legal:
            obs = {**obs, MASK_KEY: np.ones_like(obs[MASK_KEY])}
        return obs

    # --- the contract ---------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[list, list[dict]]:
        if self.parallel:
            obs, infos = self.env.reset(seed=seed)
        else:
            self.env.reset(seed=seed)
            infos = {}
        self._returns[:] = 0.0
        self._lengths[:] = 0
        self._ended[:] = False
        return self._observe_all(obs if self.parallel else None), [
            dict(infos.get(a, {})) for a in self.agents
        ]

    def _observe_all(self, parallel_obs: dict | None) -> list:
        """Every slot's observation now (zeros for absent agents); marks who is alive: present and
        not ended this episode (an AEC env keeps a done agent in `agents` until it steps None, and
        some Parallel envs keep theirs)."""
        present = set(self.env.agents)
        out = []
        for i, a in enumerate(self.agents):
            self._alive[i] = a in present and not self._ended[i]
            if parallel_obs is not None:
                out.append(self._obs(parallel_obs[a], True) if a in parallel_obs else self._zero_obs)
            elif a in present:
                out.append(self._obs(self.env.observe(a), a == self.env.agent_selection))
            else:
                out.append(self._zero_obs)
        return out

    def step(self, actions) -> tuple[list, list[float], list[bool], list[bool], list[dict]]:
        n = self.num_agents
        rewards = np.zeros(n, dtype=np.float32)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        infos: list[dict] = [{} for _ in range(n)]
        alive = {a for i, a in enumerate(self.agents) if self._alive[i]}
        if self.parallel:
            acting = [a for a in self.env.agents if a in alive]
            obs, rew, term, trunc, env_infos = self.env.step(
                {a: actions[self.agents.index(a)] for a in self.env.agents}
            )
        else:
            acting = [self.env.agent_selection] if self.env.agent_selection in alive else []
            self.env.step(actions[self.agents.index(self.env.agent_selection)])
            obs = None
            rew, term, trunc, env_infos = (
                self.env.rewards,
                self.env.terminations,
                self.env.truncations,
                self.env.infos,
            )
        for i, a in enumerate(self.agents):
            infos[i] = dict(env_infos.get(a, {}))
            infos[i]["is_active"] = a in acting
            if not self._alive[i]:
                continue
            rewards[i] = float(rew.get(a, 0.0))
            terminated[i] = bool(term.get(a, False))
            truncated[i] = bool(trunc.get(a, False)) and not terminated[i]
            self._returns[i] += rewards[i]
            self._lengths[i] += 1
            if terminated[i] or truncated[i]:
                infos[i]["episode"] = {"r": float(self._returns[i]), "l": int(self._lengths[i])}
                self._alive[i] = False
                self._ended[i] = True
        if not self.parallel:  # the AEC protocol: dead agents leave by stepping None
            while self.env.agents and (
                self.env.terminations[self.env.agent_selection]
                or self.env.truncations[self.env.agent_selection]
            ):
                self.env.step(None)
        if not self.env.agents or self._ended[[self.agents.index(a) for a in self.env.agents]].all():
            # every agent is done: the next episode (auto-reset)
            next_obs, reset_infos = self.reset()
            for i, info in enumerate(reset_infos):
                infos[i] = {**info, **infos[i]}
            return next_obs, list(rewards), list(terminated), list(truncated), infos
        next_obs = self._observe_all(obs)
        return next_obs, list(rewards), list(terminated), list(truncated), infos

    def render(self):
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self):
        return self.env.unwrapped


def make_pettingzoo_env(
    full_env_name: str, cfg: Config, render_mode: str | None = None
) -> PettingZooAsMultiAgent:
    """The PettingZoo env of `full_env_name` (module `pettingzoo.<group>.<env>`) made with
    `--pettingzoo_kwargs`, through its `parallel_env` or `env` as `--pettingzoo_api` says.

    Raises:
        EnvError: PettingZoo (or the env's own dependency) is not installed, or the module has no
            constructor for the requested API.
        ConfigError: no such env module.
    """
    p = family_params(cfg, PettingZooParams) if hasattr(cfg, "env_params") else PettingZooParams()
    name = module_name(full_env_name)
    try:
        importlib.import_module("pettingzoo")
    except ImportError as e:
        raise EnvError('the pettingzoo_ family needs PettingZoo: pip install "surge-rl[pettingzoo]"') from e
    try:
        with (
            warnings.catch_warnings()
        ):  # PettingZoo 1.27 prefers its registry; modules are the API of 1.24 on
            warnings.filterwarnings("ignore", "The old environment creation API", DeprecationWarning)
            module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and (e.name == name or name.startswith(e.name + ".")):
            raise ConfigError(
                "env",
                f"PettingZoo has no env module {name!r}.",
                "see https://pettingzoo.farama.org for the names, e.g. pettingzoo_classic.connect_four_v3.",
            ) from None
        raise
    except ImportError as e:  # e.g. MPE moved to its own package
        raise EnvError(f"importing {name} failed: {e}") from e
    api = p.pettingzoo_api
    if api == "auto":
        api = "parallel" if hasattr(module, "parallel_env") else "aec"
    ctor = getattr(module, "parallel_env" if api == "parallel" else "env", None)
    if ctor is None:
        raise EnvError(
            f"{name} has no {'parallel_env' if api == 'parallel' else 'env'}(); try --pettingzoo_api=auto"
        )
    kwargs = env_kwargs(p.pettingzoo_kwargs)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    try:
        env = ctor(**kwargs)
    except TypeError as e:  # an argument the env does not take
        if "argument" not in str(e):
            raise
        raise ConfigError(
            "pettingzoo_kwargs",
            f"{name}.{ctor.__name__}() refused {sorted(kwargs)}: {e}.",
            "pass only the env's own arguments (see its page on pettingzoo.farama.org).",
        ) from None
    return PettingZooAsMultiAgent(env)


register_env_family(
    PREFIX,
    make_pettingzoo_env,
    extra_params=PettingZooParams,
    # board games and vector-state envs are small: the classic-control MLP (image envs such as
    # pistonball: pass --encoder_type=conv)
    default_overrides=VECTOR_OBS_DEFAULTS,
    check_name=check_pettingzoo_name,
)
