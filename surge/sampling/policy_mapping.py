"""Which policy acts for an agent: decided per agent at each episode start, as Sample Factory's
policy manager does (`--policy_mapping`, `--num_policies`).

A mapping is a function `(env_index, agent_index, episode, num_policies, rng) -> policy id` where
`env_index` counts env objects over the whole run (worker, split, env), `agent_index` is the agent's
index in its env, `episode` counts that agent's episodes from 0, and `rng` is a `random.Random`
seeded from `--seed` and the worker. Built in:

- `random`: a random policy per env and episode, the same for all agents of the env; with
  `--pbt_mix_policies_in_one_env=True` (Sample Factory's default) each agent draws its own;
- `agent_index`: agent i -> policy i mod num_policies (one policy per player of a match);
- `env_index`: env k -> policy k mod num_policies, fixed for the run;
- `self_play` (`--self_play=True`): in each episode of a two-player game policy 0 plays one side,
  first and second in turn (agent (env + episode) mod 2), and a random opponent slot 1..n-1 the
  other.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from surge.errors import ConfigError

MappingFn = Callable[[int, int, int, int, random.Random], int]

_MAPPINGS: dict[str, MappingFn] = {}


def register_policy_mapping(name: str, fn: MappingFn) -> None:
    """Makes `fn` available as `--policy_mapping=name` (register at import time of your module)."""
    _MAPPINGS[name] = fn


def _agent_index(env: int, agent: int, episode: int, n: int, rng: random.Random) -> int:
    return agent % n


def _env_index(env: int, agent: int, episode: int, n: int, rng: random.Random) -> int:
    return env % n


def _self_play(env: int, agent: int, episode: int, n: int, rng: random.Random) -> int:
    # policy 0 takes side (env + episode) mod 2, so it plays first and second in turn; every other
    # agent is an opponent slot 1..n-1 drawn at random (a two-player game pairs 0 with one slot)
    if agent == (env + episode) % 2:
        return 0
    return 1 + rng.randrange(n - 1)


register_policy_mapping("agent_index", _agent_index)
register_policy_mapping("env_index", _env_index)
register_policy_mapping("self_play", _self_play)


def mapping_names() -> list[str]:
    return ["random", *sorted(_MAPPINGS)]


class PolicyMapper:
    """The policy of each agent of one rollout worker's envs, re-drawn at episode starts.

    Args:
        name: `--policy_mapping`.
        num_policies: `--num_policies`.
        mix_in_one_env: `--pbt_mix_policies_in_one_env` (random mapping: one draw per agent).
        seed: seeds the mapping's random stream (None: unseeded).
    Raises:
        ConfigError: unknown mapping name, or a mapping that returned an id outside [0, num_policies).
    """

    def __init__(self, name: str, num_policies: int, mix_in_one_env: bool, seed: int | None):
        if name != "random" and name not in _MAPPINGS:
            raise ConfigError(
                "policy_mapping", f"unknown policy mapping {name!r}.", f"use one of {mapping_names()}."
            )
        self.name, self.num_policies, self.mix = name, num_policies, mix_in_one_env
        self.rng = random.Random(seed)
        self._env_draw: dict[int, tuple[int, int]] = {}  # env -> (episode, policy) of the shared draw

    def policy_for(self, env_index: int, agent_index: int, episode: int) -> int:
        """The policy id of `agent_index` of env `env_index` for its episode number `episode`."""
        n = self.num_policies
        if n == 1:
            return 0
        if self.name == "random":
            if self.mix:
                return self.rng.randrange(n)
            last = self._env_draw.get(env_index)
            if last is None or last[0] != episode:
                last = self._env_draw[env_index] = (episode, self.rng.randrange(n))
            return last[1]
        p = int(_MAPPINGS[self.name](env_index, agent_index, episode, n, self.rng))
        if not 0 <= p < n:
            raise ConfigError(
                "policy_mapping", f"mapping {self.name!r} returned policy {p} for {n} policies.", ""
            )
        return p
