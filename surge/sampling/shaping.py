"""Each policy's reward-shaping scheme (the Doom family's, `surge.envs.doom.reward_shaping`), as
Sample Factory's PBT evolves it: the run sends `SetRewardShaping(policy_id, scheme)` through
`Placement.send_command`, every rollout worker keeps the latest scheme of each policy and sets it
on an agent's env whenever that agent starts an episode played by that policy (and at once on the
agents playing it now).
"""

from __future__ import annotations

import copy
from typing import Any

from surge.cfg.config import Config
from surge.envs.doom.family import default_reward_shaping as doom_default


def default_reward_shaping(cfg: Config) -> dict | None:
    """The scheme the run's envs start with (Doom scenarios with shaping), else None."""
    if not str(cfg.env).startswith("doom_"):
        return None
    return doom_default(cfg)


class WorkerShaping:
    """A rollout worker's copy of each policy's scheme and of what each agent's env has now.

    Args:
        num_agents: agents per env (a multi-agent env takes the agent's index).
    """

    def __init__(self, num_agents: int):
        self.num_agents = num_agents
        self.schemes: dict[int, dict] = {}
        self.versions: dict[int, int] = {}
        self.applied: dict[tuple[int, int], tuple[int, int]] = {}  # (split, agent) -> (policy, version)

    def set(self, policy_id: int, scheme: dict) -> None:
        self.schemes[policy_id] = copy.deepcopy(scheme)
        self.versions[policy_id] = self.versions.get(policy_id, 0) + 1

    def apply(self, envs: list[Any], split_key: int, agent: int, policy_id: int) -> None:
        """Sets policy `policy_id`'s scheme on agent `agent` (index within the split) of `envs`,
        unless it has it already or the policy has none."""
        scheme = self.schemes.get(policy_id)
        if scheme is None:
            return
        key, want = (split_key, agent), (policy_id, self.versions[policy_id])
        if self.applied.get(key) == want:
            return
        env = envs[agent // self.num_agents]
        if self.num_agents > 1:
            env.set_reward_shaping(scheme, agent % self.num_agents)
        else:  # a gymnasium env, bare or in the worker's single-agent adapter (`.env`)
            inner = env if hasattr(env, "get_wrapper_attr") else env.env
            inner.get_wrapper_attr("set_reward_shaping")(scheme)
        self.applied[key] = want
