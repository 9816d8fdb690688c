"""Batched envs: one object steps many sub-envs as a batch and presents them as agents.

A batched env follows the multi-agent contract (`surge.envs.multi_agent`) with `num_agents` = its
number of sub-envs and `is_batched = True`, and returns arrays instead of lists so the rollout
worker writes them into the trajectory buffers without per-agent Python work:

    step(actions [N, ...]) -> obs [N, ...], rewards [N] float32, terminated [N] bool,
                              truncated [N] bool, BatchedInfo

Two kinds: gymnasium vector envs of any family (`--batched_sampling=True`, same-step auto-reset),
and EnvPool (`envpool_` family), whose auto-reset happens on the step after the end of an episode:
that reset step is reported inactive (not trained on) and as an episode boundary (`terminated`),
so the recurrent state restarts for the first real step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from surge.envs.multi_agent import has_wrapper


@dataclass
class BatchedInfo:
    """Per-step info of a batched env.

    Attributes:
        episodes: (agent index, return in env reward units, length in env steps) of the true
            episodes that ended this step.
        inactive: `[N]` bool, agents whose sample must not be trained on, or None.
    """

    episodes: list[tuple[int, float, int]] = field(default_factory=list)
    inactive: np.ndarray | None = None


class GymVectorAsMultiAgent:
    """A gymnasium vector env (same-step auto-reset) of `num_envs` copies of a family's env.

    Episode statistics come from `RecordEpisodeStatistics` inside each sub-env (added when the
    sub-env does not record its own, e.g. Atari records whole games below its life-loss wrapper).
    """

    is_batched = True
    is_multiagent = True

    def __init__(self, make_one, num_envs: int, asynchronous: bool = False):
        from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

        def thunk():
            env = make_one()
            if not has_wrapper(env, gym.wrappers.RecordEpisodeStatistics):
                env = gym.wrappers.RecordEpisodeStatistics(env)
            return env

        cls = AsyncVectorEnv if asynchronous else SyncVectorEnv
        self.env = cls([thunk] * num_envs, autoreset_mode=AutoresetMode.SAME_STEP)
        self.num_agents = num_envs
        self.observation_space = self.env.single_observation_space
        self.action_space = self.env.single_action_space

    def reset(self, seed: int | None = None):
        obs, _ = self.env.reset(seed=seed)
        return obs, [{} for _ in range(self.num_agents)]

    def step(self, actions):
        obs, rew, term, trunc, info = self.env.step(np.asarray(actions))
        binfo = BatchedInfo()
        final = info.get("final_info", info)  # same-step auto-reset keeps the ended episodes' infos here
        if "episode" in final:
            ep = final["episode"]
            for i in np.flatnonzero(final.get("_episode", ep.get("_r"))):
                binfo.episodes.append((int(i), float(ep["r"][i]), int(ep["l"][i])))
        return obs, rew.astype(np.float32), term, trunc, binfo

    def render(self):
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class EnvPoolAsMultiAgent:
    """An EnvPool env (gymnasium API) of `num_envs` sub-envs as agents.

    EnvPool resets a sub-env on the step after its episode ended; that step carries no experience
    (the action is ignored, reward 0), so it is reported inactive and as an episode boundary.
    Episode returns are whole games in raw score (`info["reward"]`, ended by `info["terminated"]`
    or truncation), also when `episodic_life` ends an episode at every life loss.
    """

    is_batched = True
    is_multiagent = True

    def __init__(self, pool: Any, remake: Any = None):
        """`remake(seed)` builds the same pool with another seed: EnvPool seeds at construction,
        so `reset(seed=s)` with a new s rebuilds the pool (once, at start-up)."""
        self.env = pool
        self._remake = remake
        self._seed: int | None = None
        self.num_agents = int(pool.config["num_envs"])
        self.observation_space = pool.observation_space
        self.action_space = pool.action_space
        n = self.num_agents
        self._resetting = np.zeros(n, dtype=bool)
        self._ret = np.zeros(n, dtype=np.float64)
        self._len = np.zeros(n, dtype=np.int64)

    def reset(self, seed: int | None = None):
        if seed is not None and seed != self._seed and self._remake is not None:
            self.close()
            self.env, self._seed = self._remake(seed), seed
        obs, _ = self.env.reset()
        self._resetting[:] = False
        self._ret[:] = 0.0
        self._len[:] = 0
        return obs, [{} for _ in range(self.num_agents)]

    def step(self, actions):
        obs, rew, term, trunc, info = self.env.step(np.asarray(actions))
        resetting = self._resetting.copy()
        binfo = BatchedInfo(inactive=resetting if resetting.any() else None)
        live = ~resetting
        self._ret[live] += info["reward"][live]
        self._len[live] += 1
        done = (term | trunc) & live
        game_over = done & (info["terminated"].astype(bool) | trunc)
        for i in np.flatnonzero(game_over):
            binfo.episodes.append((int(i), float(self._ret[i]), int(self._len[i])))
        self._ret[game_over] = 0.0
        self._len[game_over] = 0
        self._resetting = done
        term = term | resetting  # the reset step is a boundary: the next step starts from zero state
        return obs, rew.astype(np.float32), term, trunc & ~resetting, binfo

    def render(self):
        return None

    def close(self) -> None:
        close = getattr(self.env, "close", None)
        if close is not None:
            close()
