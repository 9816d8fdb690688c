"""EnvPool's DeepMind Control suite tasks as a batched env family: `envpool_dmc_cheetah_run` steps
`--env_agents` copies of EnvPool's `CheetahRun-v1` in its C++ thread pool (the MuJoCo physics of
dm_control's suite, compiled into EnvPool; dm_control itself is not needed).

dm_control's observation is a dict of float64 arrays (`position`, `velocity`, ...); the family
flattens it into one float32 vector per sub-env, the dict's entries concatenated in the order of
EnvPool's observation space (sorted keys), each entry flattened, as rl_games' EnvPool env does with
`flatten_obs: True` (`rl_games/envs/envpool.py`, `flatten_dict`: the same entries in the dict's
order). Actions are a float32 Box in [-1, 1] (every suite task's action spec). Episodes end by
time only (1000 control steps by default, dm_control's); the reward is dm_control's, in [0, 1]
per step.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from surge.cfg.config import Config, family_params, param
from surge.envs.batched import BatchedInfo, EnvPoolAsMultiAgent
from surge.envs.envpool_family import pool_maker
from surge.envs.registry import register_env_family
from surge.errors import ConfigError, EnvError

PREFIX = "envpool_dmc_"

#: EnvPool 1.2.5's dm_control suite task ids (its registry entries of `envpool.mujoco.dmc`);
#: a test checks them against the installed EnvPool's registry
DMC_TASK_IDS = (
    "AcrobotSwingup-v1",
    "AcrobotSwingupSparse-v1",
    "BallInCupCatch-v1",
    "CartpoleBalance-v1",
    "CartpoleBalanceSparse-v1",
    "CartpoleSwingup-v1",
    "CartpoleSwingupSparse-v1",
    "CartpoleThreePoles-v1",
    "CartpoleTwoPoles-v1",
    "CheetahRun-v1",
    "DogFetch-v1",
    "DogRun-v1",
    "DogStand-v1",
    "DogTrot-v1",
    "DogWalk-v1",
    "FingerSpin-v1",
    "FingerTurnEasy-v1",
    "FingerTurnHard-v1",
    "FishSwim-v1",
    "FishUpright-v1",
    "HopperHop-v1",
    "HopperStand-v1",
    "HumanoidRun-v1",
    "HumanoidRunPureState-v1",
    "HumanoidStand-v1",
    "HumanoidWalk-v1",
    "HumanoidCMURun-v1",
    "HumanoidCMUStand-v1",
    "HumanoidCMUWalk-v1",
    "LqrLqr21-v1",
    "LqrLqr62-v1",
    "ManipulatorBringBall-v1",
    "ManipulatorBringPeg-v1",
    "ManipulatorInsertBall-v1",
    "ManipulatorInsertPeg-v1",
    "PendulumSwingup-v1",
    "PointMassEasy-v1",
    "PointMassHard-v1",
    "QuadrupedEscape-v1",
    "QuadrupedFetch-v1",
    "QuadrupedRun-v1",
    "QuadrupedWalk-v1",
    "ReacherEasy-v1",
    "ReacherHard-v1",
    "StackerStack2-v1",
    "StackerStack4-v1",
    "SwimmerSwimmer6-v1",
    "SwimmerSwimmer15-v1",
    "WalkerRun-v1",
    "WalkerStand-v1",
    "WalkerWalk-v1",
)


def dmc_env_name(task_id: str) -> str:
    """EnvPool's id -> surge's name: `CheetahRun-v1` -> `envpool_dmc_cheetah_run`,
    `HumanoidCMURun-v1` -> `envpool_dmc_humanoid_cmu_run`."""
    stem = task_id.rsplit("-v", 1)[0]
    return PREFIX + re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", stem).lower()


#: surge name -> EnvPool id
DMC_TASKS = {dmc_env_name(t): t for t in DMC_TASK_IDS}


def dmc_task_id(full_env_name: str) -> str:
    """`envpool_dmc_cheetah_run` -> `CheetahRun-v1`.

    Raises:
        ConfigError: not one of EnvPool's dm_control tasks, with the closest names.
    """
    task = DMC_TASKS.get(full_env_name)
    if task is None:
        raise ConfigError(
            "env",
            f"unknown EnvPool dm_control task {full_env_name!r}.",
            "use one of: "
            + ", ".join(difflib.get_close_matches(full_env_name, list(DMC_TASKS), n=3, cutoff=0.5))
            + (" (EnvPool's dm_control tasks are " + PREFIX + "<domain>_<task>: envpool_dmc_cheetah_run)"),
        )
    return task


@dataclass
class EnvPoolDmcParams:
    """Flags of the `envpool_dmc_` family (the batch size is the core `--env_agents`)."""

    envpool_num_threads: int = param(1, "EnvPool's own C++ threads per batched env (0: EnvPool's default).")
    dmc_max_episode_steps: int = param(1000, "Control steps per episode (dm_control's suite: 1000).")

    def validate(self) -> None:
        """Raises `ConfigError` for a flag out of range."""
        if self.envpool_num_threads < 0:
            raise ConfigError(
                "envpool_num_threads", f"must be >= 0, got {self.envpool_num_threads}.", "pass 0 or more."
            )
        if self.dmc_max_episode_steps < 1:
            raise ConfigError(
                "dmc_max_episode_steps", f"must be >= 1, got {self.dmc_max_episode_steps}.", "pass 1 or more."
            )


class EnvPoolDmcAsMultiAgent(EnvPoolAsMultiAgent):
    """An EnvPool dm_control pool (gymnasium API) of `num_envs` sub-envs as agents, with the dict
    observation flattened: `observation_space` is `Box(-inf, inf, (D,), float32)`, D the summed
    sizes of the dict's entries, and `step`/`reset` return obs `[N, D]` float32.

    As `EnvPoolAsMultiAgent`: the step after an episode's end is EnvPool's reset (reported inactive
    and as a boundary); an episode's return sums the rewards of its live steps (dm_control has no
    game-over/life distinction: each episode ends by time, `truncated`).
    """

    def __init__(self, pool: Any, remake: Any = None):
        super().__init__(pool, remake)
        space = pool.observation_space
        if not isinstance(space, gym.spaces.Dict):
            raise EnvError(
                f"EnvPool dm_control pool with a {type(space).__name__} observation space, not a Dict"
            )
        self._keys = tuple(space.spaces)
        dim = sum(math.prod(s.shape or ()) for s in space.spaces.values())
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32)
        act = pool.action_space
        self.action_space = gym.spaces.Box(
            act.low.astype(np.float32), act.high.astype(np.float32), act.shape, np.float32
        )

    def _flat(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        n = self.num_agents
        # one float32 array per batch step (the rollout worker copies it into its buffers)
        return np.concatenate([obs[k].reshape(n, -1) for k in self._keys], axis=1, dtype=np.float32)

    def reset(self, seed: int | None = None):
        obs, infos = super().reset(seed)
        return self._flat(obs), infos

    def step(self, actions):
        obs, rew, term, trunc, info = self.env.step(np.asarray(actions, dtype=np.float64))
        resetting = self._resetting.copy()
        binfo = BatchedInfo(inactive=resetting if resetting.any() else None)
        live = ~resetting
        self._ret[live] += rew[live]
        self._len[live] += 1
        done = (term | trunc) & live
        for i in np.flatnonzero(done):
            binfo.episodes.append((int(i), float(self._ret[i]), int(self._len[i])))
        self._ret[done] = 0.0
        self._len[done] = 0
        self._resetting = done
        term = term | resetting  # the reset step is a boundary: the next step starts from zero state
        return self._flat(obs), rew.astype(np.float32), term, trunc & ~resetting, binfo


def make_envpool_dmc_env(
    full_env_name: str, cfg: Config, render_mode: str | None = None
) -> EnvPoolDmcAsMultiAgent:
    """An `EnvPoolDmcAsMultiAgent` of `cfg.env_agents` copies of the task, with the family's
    section (`cfg.env_params`, an `EnvPoolDmcParams`).

    Raises:
        EnvError: envpool is not installed.
        ConfigError: not an EnvPool dm_control task.
    """
    p = family_params(cfg, EnvPoolDmcParams)
    make, first_seed = pool_maker(
        "envpool_dmc_",
        dmc_task_id(full_env_name),
        cfg,
        int(p.envpool_num_threads),
        max_episode_steps=int(p.dmc_max_episode_steps),
    )
    return EnvPoolDmcAsMultiAgent(make(first_seed), remake=make)


register_env_family(
    PREFIX,
    make_envpool_dmc_env,
    extra_params=EnvPoolDmcParams,
    default_overrides={"num_envs_per_worker": 1, "worker_num_splits": 1},
    names=tuple(DMC_TASKS),
    batched=True,
    preload=("envpool",),
    check_name=dmc_task_id,
)
