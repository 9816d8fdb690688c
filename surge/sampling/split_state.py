"""A rollout worker's per-split state (`SplitState`: the agents' slots, the step t, the acting
policies) and the record of a finished episode (`EpisodeStats`, `note_episode`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from surge.sampling.objective import episode_statistic


@dataclass
class EpisodeStats:
    """One finished episode: return in env reward units, length in env steps, and (with
    `--with_pbt` and a `--pbt_target_objective` other than true_reward) that statistic as the env
    reported it (`surge.sampling.objective`), in `extra` by name."""

    episode_return: float
    episode_length: int
    policy_id: int = 0
    extra: dict[str, float] | None = None


@dataclass
class SplitState:
    """The agents of one split: their slots `[N]` int64 and the current step t in the rollout."""

    envs: list[Any]
    slots: Tensor
    t: int = 0
    index: slice | Tensor = field(init=False)  # `slots` as a slice when contiguous (cheap views)
    np_index: slice | np.ndarray = field(init=False)  # the same, to index the buffers' numpy views
    np_slots: np.ndarray = field(init=False)  # `slots` as numpy
    n: int = field(init=False)  # len(slots): agents of the split
    num_agents: int = 1
    episodes: list[EpisodeStats] = field(default_factory=list)
    first_env: int = 0  # run-wide index of the split's first env object (policy mapping)
    agent_policy: Tensor = field(init=False)  # [N] int8: the policy acting for each agent
    agent_episode: np.ndarray = field(init=False)  # [N]: episodes each agent started so far
    policies: list[int] = field(init=False)  # the distinct policies in agent_policy
    # [N] bool: agents whose latest observation was non-finite (replaced by 0): their next step
    # is marked inactive
    bad_obs: np.ndarray | None = None
    # [N] bool: agents whose current episode began with the decorrelation's random actions: its
    # return is not the policy's, so it is left out of the episode statistics
    random_start: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.set_slots(self.slots)
        n = len(self.slots)
        self.agent_policy = torch.zeros(n, dtype=torch.int8)
        self.agent_episode = np.zeros(n, dtype=np.int64)
        self.policies = [0]
        self.random_start = np.zeros(n, dtype=bool)

    def set_slots(self, slots: Tensor) -> None:
        self.slots = slots
        first, n = int(slots[0]), len(slots)
        self.n = n
        contiguous = int(slots[-1]) - first == n - 1 and bool((slots.diff() == 1).all())
        self.np_slots = slots.numpy()
        if contiguous:
            self.index = self.np_index = slice(first, first + n)
        else:
            self.index, self.np_index = slots, self.np_slots


def note_episode(
    split: SplitState, j: int, info: dict[str, Any], mapped: bool, objective_name: str | None
) -> None:
    """Records the episode that agent `j` of `split` ended, when `info` marks one (a true
    episode's `info["episode"]`) and it did not begin with decorrelation's random actions: its
    policy (`mapped`: several policies, else 0) and, with `objective_name` (PBT selecting on a
    statistic other than the return, `surge.sampling.objective`), that statistic when present."""
    ep = info.get("episode")
    if ep is not None and not split.random_start[j]:
        extra = None
        if objective_name is not None:
            value = episode_statistic(info, objective_name)
            extra = None if value is None else {objective_name: value}
        split.episodes.append(
            EpisodeStats(
                float(np.asarray(ep["r"])),
                int(np.asarray(ep["l"])),
                int(split.agent_policy[j]) if mapped else 0,
                extra,
            )
        )
