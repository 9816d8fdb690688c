"""The one factory of a run's components: both placements build from here.

`make_layout` decides and allocates what every process shares (env spaces, the algorithm, the
trajectory buffers with the algorithm's fields, the block pool); `make_model`, `make_learner`,
`make_inference` and `make_rollout_worker` build one component each from the layout. The serial
placement calls them all in one process (`build_components`); the async placement puts the layout in
shared memory and calls the same functions inside each child process.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

from surge.cfg.config import Config, env_frameskip, minibatches_to_accumulate
from surge.cfg.validate import check_policy_mapping
from surge.data.block_pool import BlockPool
from surge.data.trajectory import TrajectoryBuffers
from surge.envs.check import check_env_spaces
from surge.envs.registry import make_env
from surge.learning.algorithm import Algorithm, Feed, get_algorithm
from surge.learning.base import LearnerBase
from surge.learning.batcher import Batcher, blocks_per_batch, traj_per_iteration
from surge.models.actor_critic import ActorCritic, make_actor_critic
from surge.population.roles import learning_policies
from surge.sampling.inference import InferenceWorker
from surge.sampling.policy_mapping import PolicyMapper
from surge.sampling.rollout_worker import RolloutWorker


@dataclass
class EnvInfo:
    """What the components need to know of the env before allocating anything."""

    observation_space: gym.Space
    action_space: gym.Space
    num_agents: int  # agents of one env object (the sub-envs of a batched env)
    frameskip: int
    agents_per_step: int  # agent steps per env step: 1 for a batched env's sub-env, else num_agents


def env_info(cfg: Config) -> EnvInfo:
    """Makes one env to read its spaces and number of agents, then closes it.

    Raises:
        EnvError: spaces this config cannot train on (`surge.envs.check.check_env_spaces`).
        ConfigError: buffers and model would not fit in this machine's memory, or policies the
            mapping can never pick (`surge.cfg.validate.check_policy_mapping`).
    """
    env = make_env(cfg)
    try:
        n = int(env.num_agents)
        per_step = 1 if getattr(env, "is_batched", False) else n
        info = EnvInfo(env.observation_space, env.action_space, n, env_frameskip(cfg), per_step)
    finally:
        env.close()
    check_env_spaces(cfg, info.observation_space, info.action_space, n)
    check_policy_mapping(cfg, n)  # validation checked it too, unless the env could not be made there
    return info


def torch_device(cfg: Config) -> torch.device:
    """`cuda` for `--device=gpu`, else `cpu`."""
    return torch.device("cuda" if cfg.device == "gpu" else "cpu")


def seed_everything(seed: int | None) -> None:
    """Seeds Python, numpy and torch (no-op for None)."""
    if seed is not None:
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)


def blocks_per_split(cfg: Config, num_agents: int) -> int:
    """Trajectory blocks each (worker, split) owns. A learner holds a batch's blocks until it has
    trained on it, up to an iteration's worth times the accumulation Sample Factory allows
    (`minibatches_to_accumulate`: -1 = 2 x num_batches_per_iteration, 0 = none), while each
    split keeps one in progress; with every block held, collection pauses. With several policies
    each learner waits for its own batch, so the pool holds as much for each learning policy (a
    frozen one holds none): the trajectories learners short of a batch hold (fewer than a batch
    each, `surge.data.block_pool`) never leave every split without a rollout's worth of free
    slots."""
    agents_per_split = cfg.num_envs_per_worker // cfg.worker_num_splits * num_agents
    owners = cfg.num_workers * cfg.worker_num_splits
    learners = len(learning_policies(cfg))
    per_iteration_blocks = math.ceil(traj_per_iteration(cfg, num_agents) / agents_per_split) * learners
    acc = minibatches_to_accumulate(cfg)
    if acc == 0:  # synchronous: collection waits while the learners hold every block
        # one block more per owner with several policies (frozen ones too): learners hold single
        # trajectories, so the free slots of an owner can fall short of a block (a frozen policy's
        # slots are freed at once) while no learner has its batch yet
        return max(1, math.ceil(per_iteration_blocks / owners)) + (cfg.num_policies > 1)
    iterations = 2 if acc < 0 else math.ceil(acc / cfg.num_batches_per_iteration)
    held = math.ceil(per_iteration_blocks * iterations / owners)
    return max(cfg.min_traj_buffers_per_worker, held + 1)


@dataclass
class RunLayout:
    """What every component of a run shares: allocated once, in shared memory in the async
    placement. `rnn_state_size` is the model's (0 without an RNN)."""

    cfg: Config
    algo: Algorithm
    info: EnvInfo
    rnn_state_size: int
    block_pool: BlockPool
    buffers: TrajectoryBuffers

    @property
    def blocks_per_batch(self) -> int:
        return blocks_per_batch(self.cfg, self.block_pool.block_size, self.info.num_agents)

    def make_batcher(self) -> Batcher:
        """A learner's batcher: an iteration's trajectories per batch (on-policy), or each rollout's
        share as it comes (replay learners)."""
        replay = self.algo.feed is Feed.REPLAY
        per_batch = 1 if replay else traj_per_iteration(self.cfg, self.info.num_agents)
        return Batcher(per_batch, self.block_pool.block_size)


def make_layout(cfg: Config, info: EnvInfo, rnn_state_size: int) -> RunLayout:
    """Sizes the block pool and allocates the buffers for the env of `info` and a model whose
    recurrent state is `rnn_state_size` wide."""
    algo = get_algorithm(cfg.algo)
    agents_per_split = cfg.num_envs_per_worker // cfg.worker_num_splits * info.num_agents
    pool = BlockPool(
        cfg.num_workers * cfg.worker_num_splits,
        blocks_per_split(cfg, info.num_agents),
        agents_per_split,
        cfg.num_policies,
    )
    buffers = TrajectoryBuffers(
        pool.num_slots,
        cfg.rollout,
        info.observation_space,
        info.action_space,
        rnn_state_size,
        algo.step_fields(info.action_space),
    )
    return RunLayout(cfg, algo, info, rnn_state_size, pool, buffers)


def make_model(cfg: Config, info: EnvInfo, device: torch.device) -> ActorCritic:
    """A fresh actor-critic for the env's spaces on `device`."""
    return make_actor_critic(cfg, info.observation_space, info.action_space).to(device)


def make_learner(layout: RunLayout, model: ActorCritic, device: torch.device, policy_id: int) -> LearnerBase:
    """The algorithm's learner of policy `policy_id`.

    Raises:
        ValueError: the algorithm does not train (e.g. DUMMY_SAMPLER).
    """
    if layout.algo.make_learner is None:
        raise ValueError(f"algorithm {layout.algo.name} has no learner")
    return layout.algo.make_learner(layout.cfg, model, layout.buffers, device, policy_id)


def make_inference(
    layout: RunLayout, model: ActorCritic, device: torch.device, policy_id: int
) -> InferenceWorker:
    """An inference worker acting with the algorithm's `act` for policy `policy_id`."""
    return InferenceWorker(
        model,
        layout.buffers,
        device,
        layout.algo.act,
        policy_id=policy_id,
        num_policies=layout.cfg.num_policies,
        reads_obs=layout.algo.act_reads_obs,
    )


def make_rollout_worker(layout: RunLayout, worker_idx: int) -> RolloutWorker:
    """Rollout worker `worker_idx` with its envs, its splits' blocks and its policy mapping."""
    cfg = layout.cfg
    splits = cfg.worker_num_splits
    per_split = cfg.num_envs_per_worker // splits
    env_splits = [[make_env(cfg) for _ in range(per_split)] for _ in range(splits)]
    pools = [layout.block_pool.owner_view(worker_idx * splits + s) for s in range(splits)]
    mapper = PolicyMapper(
        "self_play" if cfg.self_play else cfg.policy_mapping,
        cfg.num_policies,
        cfg.pbt_mix_policies_in_one_env,
        None if cfg.seed is None else cfg.seed * 7919 + worker_idx,
    )
    has_learners = layout.algo.trains and not cfg.sampler_only
    return RolloutWorker(
        cfg,
        worker_idx,
        env_splits,
        layout.buffers,
        pools,
        mapper,
        has_learners,
        env_factory=lambda: make_env(cfg),
        learning=learning_policies(cfg),
    )


@dataclass
class Components:
    """Every component of a run in one process (the serial placement): per policy a model and an
    inference worker, and per learning policy (`surge.population.roles`) a learner, keyed by policy
    id (none for algorithms that do not train, nor for frozen policies)."""

    layout: RunLayout
    models: list[ActorCritic]
    learners: dict[int, LearnerBase]
    inferences: list[InferenceWorker]
    workers: list[RolloutWorker]
    device: torch.device

    @property
    def cfg(self) -> Config:
        return self.layout.cfg

    @property
    def info(self) -> EnvInfo:
        return self.layout.info

    @property
    def buffers(self) -> TrajectoryBuffers:
        return self.layout.buffers

    @property
    def block_pool(self) -> BlockPool:
        return self.layout.block_pool

    # policy 0's components, for single-policy callers
    @property
    def model(self) -> ActorCritic:
        return self.models[0]

    @property
    def learner(self) -> LearnerBase:
        return self.learners[0]

    @property
    def inference(self) -> InferenceWorker:
        return self.inferences[0]

    def close(self) -> None:
        for w in self.workers:
            w.close()


def build_components(cfg: Config) -> Components:
    """Everything the serial placement runs, in this process."""
    seed_everything(cfg.seed)
    info = env_info(cfg)
    device = torch_device(cfg)
    models = [make_model(cfg, info, device) for _ in range(cfg.num_policies)]
    layout = make_layout(cfg, info, int(models[0].rnn_state_size))
    trains = layout.algo.trains
    learning = learning_policies(cfg) if trains else []
    learners = {p: make_learner(layout, models[p], device, p) for p in learning}
    inferences = [make_inference(layout, m, device, p) for p, m in enumerate(models)]
    workers = [make_rollout_worker(layout, w) for w in range(cfg.num_workers)]
    return Components(layout, models, learners, inferences, workers, device)


__all__ = [
    "Components",
    "EnvInfo",
    "RunLayout",
    "blocks_per_split",
    "build_components",
    "env_info",
    "make_inference",
    "make_layout",
    "make_learner",
    "make_model",
    "make_rollout_worker",
    "seed_everything",
    "torch_device",
    "traj_per_iteration",
]
