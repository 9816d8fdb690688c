"""A rollout worker's reset: every env reset (seeded per env object), optionally decorrelated by
random actions, and the first observations written at t = 0."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import numpy as np

from surge.envs.action_masks import MASK_KEY, has_action_mask, sample_legal
from surge.sampling.observations import as_array_tree, cat_obs
from surge.sampling.split_state import SplitState

if TYPE_CHECKING:  # the worker calls these: a type only, no import circle
    from surge.sampling.rollout_worker import RolloutWorker


def reset_worker(worker: RolloutWorker) -> None:
    """Resets every env of `worker` and writes the first observations at t = 0. With `cfg.seed`, env object k
    (counted over workers, splits and envs) gets seed `seed·100003 + k·num_agents`, so the
    sub-envs of batched envs (seeded `s, s+1, ...` by gymnasium) never share a seed.

    With `decorrelate_envs_on_one_worker` each env first takes a random number (< rollout) of
    uniformly random actions; the episode they leave unfinished is not reported in the episode
    statistics (its return is partly the random actions', e.g. Breakout lives lost before the
    policy played)."""
    seed = worker.cfg.seed
    if seed is not None:  # the decorrelation steps' random actions repeat with the seed
        worker.action_space.seed(seed * 100003 + worker.worker_idx)
    envs_per_split = len(worker.splits[0].envs)
    for s_idx, split in enumerate(worker.splits):
        if worker.mapper is not None:
            worker._map_policies(split, np.ones(len(split.slots), dtype=bool))
        obs_all: list = []
        for e_idx, env in enumerate(split.envs):
            env_seed = None
            if seed is not None:
                flat = (worker.worker_idx * len(worker.splits) + s_idx) * envs_per_split + e_idx
                env_seed = seed * 100003 + flat * worker.num_agents
            obs, _ = env.reset(seed=env_seed)
            if worker.cfg.decorrelate_envs_on_one_worker and not worker.is_batched:
                n_random = random.randrange(worker.rollout)
                obs = random_steps(worker, split, e_idx, obs, n_random)
                lo = e_idx * worker.num_agents
                split.random_start[lo : lo + worker.num_agents] = n_random > 0
            if worker.is_batched:
                obs_all.append(obs)
            else:
                obs_all.extend(obs)
        split.bad_obs = None
        if worker.is_batched:
            worker.obs_writer.put(split, 0, as_array_tree(cat_obs(obs_all)))
        else:
            worker.obs_writer.write(split, 0, obs_all)
        worker.buffers.rnn_states[split.index, 0] = 0.0


def random_steps(worker: RolloutWorker, split: SplitState, e_idx: int, obs: list, n: int) -> list:
    """Steps env `e_idx` of `split` (of `worker`) `n` times with random actions (decorrelation), legal ones
    under the observations' action masks; a fault rebuilds the env, whose first observations
    are returned then."""
    masked = has_action_mask(worker.obs_space)
    for _ in range(n):
        if masked:
            actions = [sample_legal(worker.action_space, o[MASK_KEY]) for o in obs]
        else:
            actions = [worker.action_space.sample() for _ in range(worker.num_agents)]
        try:
            obs, *_ = split.envs[e_idx].step(actions)
        except Exception as e:  # noqa: BLE001 - a fault, as in `advance`
            return worker._replace_env(split, e_idx, e)
    return obs
