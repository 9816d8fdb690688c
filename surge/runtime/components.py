"""Builds the components of a run (envs, model, trajectory buffers, workers, learner) from a config.
The placements only decide where these run: all here (serial), or each in its process (async)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from surge.cfg.config import env_frameskip, minibatches_to_accumulate
from surge.data.trajectory import TrajectoryBuffers
from surge.envs.registry import make_env
from surge.learning.learner import Learner
from surge.models.actor_critic import make_actor_critic
from surge.runtime.shared_state import BlockPool
from surge.sampling.inference import InferenceWorker
from surge.sampling.rollout_worker import RolloutWorker


@dataclass
class EnvInfo:
    """What the components need to know of the env before allocating anything."""

    observation_space: Any
    action_space: Any
    num_agents: int  # agents of one env object (the sub-envs of a batched env)
    frameskip: int
    agents_per_step: int  # agent steps per env step: 1 for a batched env's sub-env, else num_agents


def env_info(cfg: Any) -> EnvInfo:
    """Makes one env to read its spaces and number of agents, then closes it."""
    env = make_env(cfg)
    try:
        n = int(env.num_agents)
        per_step = 1 if getattr(env, "is_batched", False) else n
        return EnvInfo(env.observation_space, env.action_space, n, env_frameskip(cfg), per_step)
    finally:
        env.close()


def torch_device(cfg: Any) -> torch.device:
    """`cuda` for `--device=gpu`, else `cpu`."""
    return torch.device("cuda" if cfg.device == "gpu" else "cpu")


def seed_everything(seed: int | None) -> None:
    """Seeds Python, numpy and torch (no-op for None)."""
    if seed is not None:
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)


def traj_per_iteration(cfg: Any) -> int:
    """Trajectories (one agent's rollout each) the learner trains on per iteration."""
    return max(1, cfg.batch_size * cfg.num_batches_per_iteration // cfg.rollout)


def blocks_per_split(cfg: Any, num_agents: int) -> int:
    """Trajectory blocks each (worker, split) owns. The learner holds a batch's blocks until it has
    trained on it, up to an iteration's worth times the accumulation Sample Factory allows
    (`minibatches_to_accumulate`: -1 = 2 x num_batches_per_iteration, 0 = none), while each
    split keeps one in progress; with every block held, collection pauses."""
    agents_per_split = cfg.num_envs_per_worker // cfg.worker_num_splits * num_agents
    owners = cfg.num_workers * cfg.worker_num_splits
    per_iteration_blocks = math.ceil(traj_per_iteration(cfg) / agents_per_split)
    acc = minibatches_to_accumulate(cfg)
    if acc == 0:  # synchronous PPO: collection waits while the learner holds every block
        return max(1, math.ceil(per_iteration_blocks / owners))
    iterations = 2 if acc < 0 else math.ceil(acc / cfg.num_batches_per_iteration)
    held = math.ceil(per_iteration_blocks * iterations / owners)
    return max(cfg.min_traj_buffers_per_worker, held + 1)


def make_block_pool(cfg: Any, num_agents: int) -> BlockPool:
    """Trajectory slots in blocks of one split's agents, `blocks_per_split` per (worker, split)."""
    agents_per_split = cfg.num_envs_per_worker // cfg.worker_num_splits * num_agents
    return BlockPool(
        cfg.num_workers * cfg.worker_num_splits, blocks_per_split(cfg, num_agents), agents_per_split
    )


@dataclass
class Components:
    """The components of one policy wired to one set of trajectory buffers (serial placement)."""

    cfg: Any
    info: EnvInfo
    model: torch.nn.Module
    buffers: TrajectoryBuffers
    block_pool: BlockPool
    workers: list[RolloutWorker]
    inference: InferenceWorker
    learner: Learner
    device: torch.device

    def close(self) -> None:
        for w in self.workers:
            w.close()


def build_components(cfg: Any) -> Components:
    """Everything the serial placement runs, wired to one set of trajectory buffers."""
    seed_everything(cfg.seed)
    info = env_info(cfg)
    device = torch_device(cfg)
    model = make_actor_critic(cfg, info.observation_space, info.action_space).to(device)
    pool = make_block_pool(cfg, info.num_agents)
    buffers = TrajectoryBuffers(
        pool.num_slots, cfg.rollout, info.observation_space, info.action_space, model.rnn_state_size
    )
    per_split = cfg.num_envs_per_worker // cfg.worker_num_splits
    workers = []
    for w in range(cfg.num_workers):
        splits = [[make_env(cfg) for _ in range(per_split)] for _ in range(cfg.worker_num_splits)]
        owners = range(w * cfg.worker_num_splits, (w + 1) * cfg.worker_num_splits)
        workers.append(RolloutWorker(cfg, w, splits, buffers, [pool.owner_view(o) for o in owners]))
    inference = InferenceWorker(model, buffers, device)
    learner = Learner(cfg, model, buffers, device)
    return Components(cfg, info, model, buffers, pool, workers, inference, learner, device)
