"""The one factory of a run's components: both placements build from here.

`make_layout` decides and allocates what every process shares (env spaces, the algorithm, the
trajectory buffers with the algorithm's fields, the block pool); `make_model`, `make_learner`,
`make_inference` and `make_rollout_worker` build one component each from the layout. The serial
placement calls them all in one process (`build_components`); the async placement puts the layout in
shared memory and calls the same functions inside each child process.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from surge.cfg.config import Config, env_frameskip
from surge.cfg.policy_roles import learning_policies
from surge.data.block_pool import BlockPool
from surge.data.trajectory import TrajectoryBuffers
from surge.envs.registry import make_env
from surge.learning.algorithm import Algorithm, ModelParts, acting_state_size, get_algorithm
from surge.learning.amp import resolve_mixed_precision
from surge.learning.base import LearnerBase
from surge.learning.batcher import Batcher, blocks_per_batch, traj_per_iteration
from surge.runtime.env_checks import check_env_spaces
from surge.runtime.ranks import rank_info
from surge.sampling.checks import check_policy_mapping
from surge.sampling.graphed_act import cuda_graphs_choice
from surge.sampling.inference import InferenceWorker
from surge.sampling.policy_mapping import PolicyMapper
from surge.sampling.rollout_worker import RolloutWorker

log = logging.getLogger("surge")


@dataclass
class EnvInfo:
    """What the components need to know of the env before allocating anything."""

    observation_space: gym.Space
    action_space: gym.Space
    num_agents: int  # agents of one env object (the sub-envs of a batched env)
    frameskip: int
    agents_per_step: int  # agent steps per env step: 1 for a batched env's sub-env, else num_agents


def env_info(cfg: Config, with_replay: bool = True) -> EnvInfo:
    """Makes one env to read its spaces and number of agents, then closes it; `with_replay=False`
    leaves the replay out of the memory check (a Ray sampler node: the replay is on the head).

    Raises:
        EnvError: spaces this config cannot train on (`surge.runtime.env_checks.check_env_spaces`).
        ConfigError: buffers, model and the algorithm's replay (`Algorithm.replay_bytes`, per
            learning policy) would not fit in this machine's memory, or policies the mapping can
            never pick (`surge.sampling.checks.check_policy_mapping`).
    """
    env = make_env(cfg)
    try:
        n = int(env.num_agents)
        per_step = 1 if getattr(env, "is_batched", False) else n
        info = EnvInfo(env.observation_space, env.action_space, n, env_frameskip(cfg), per_step)
    finally:
        env.close()
    hook = get_algorithm(cfg.algo).replay_bytes
    replay = int(hook(cfg, info)) * len(learning_policies(cfg)) if hook is not None and with_replay else 0
    check_env_spaces(cfg, info.observation_space, info.action_space, n, replay_bytes=replay)
    check_policy_mapping(cfg, n)  # validation checked it too, unless the env could not be made there
    return info


def num_actors(cfg: Config, info: EnvInfo) -> int:
    """Acting agents of the run: `num_workers * num_envs_per_worker * num_agents`
    (`ActContext.num_actors`)."""
    return cfg.num_workers * cfg.num_envs_per_worker * info.num_agents


def torch_device(cfg: Config) -> torch.device:
    """The device of `--device`: `cpu`; `cuda:K` as given; `gpu` or `cuda`: the current GPU, or in
    a data-parallel run (torchrun, several ranks) this rank's `LOCAL_RANK` GPU."""
    if cfg.device == "cpu":
        return torch.device("cpu")
    if cfg.device.startswith("cuda:"):
        return torch.device(cfg.device)
    info = rank_info()
    return torch.device("cuda", info.local_rank) if info.distributed else torch.device("cuda")


def configure_backends(cfg: Config, device: torch.device) -> None:
    """Process-wide torch settings for a process that runs models on `device`: on a CUDA device,
    cuDNN picks each convolution's algorithm by timing the candidates on the first call of every
    input shape (`torch.backends.cudnn.benchmark`), as Sample Factory's learner and inference
    workers do (`init_torch_runtime`); its heuristic's choice can be several times slower. Off under
    `--deterministic`, whose runs must repeat bit for bit (timing picks may differ between runs). A
    CPU device changes nothing."""
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = not cfg.deterministic


def seed_everything(seed: int | None) -> None:
    """Seeds Python, numpy and torch (no-op for None)."""
    if seed is not None:
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)


def blocks_per_split(cfg: Config, num_agents: int) -> int:
    """Trajectory blocks each (worker, split) owns: the algorithm's feed decides
    (`surge.learning.feed.Feed.blocks_per_split`)."""
    return get_algorithm(cfg.algo).feed.blocks_per_split(cfg, num_agents)


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
        return self.algo.feed.make_batcher(self.cfg, self.block_pool.block_size, self.info.num_agents)


def make_layout(
    cfg: Config, info: EnvInfo, rnn_state_size: int, blocks_per_owner: int | None = None
) -> RunLayout:
    """Sizes the block pool and allocates the buffers for the env of `info` and a model whose
    recurrent state is `rnn_state_size` wide; `blocks_per_owner` overrides `blocks_per_split` (a
    Ray sampler node, whose blocks leave at once: `surge.distributed.ray_sampler`)."""
    algo = get_algorithm(cfg.algo)
    agents_per_split = cfg.num_envs_per_worker // cfg.worker_num_splits * info.num_agents
    pool = BlockPool(
        cfg.num_workers * cfg.worker_num_splits,
        blocks_per_owner or blocks_per_split(cfg, info.num_agents),
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


def make_model(cfg: Config, info: EnvInfo, device: torch.device) -> ModelParts:
    """The algorithm's fresh networks for the env's spaces (`Algorithm.make_model`), on `device`.

    Raises:
        TypeError: the acting module has no valid `rnn_state_size` (`ActingModule`).
    """
    parts = get_algorithm(cfg.algo).make_model(cfg, info.observation_space, info.action_space)
    acting_state_size(parts.acting)
    parts.acting.to(device)
    for module in parts.learner_modules.values():
        module.to(device)
    return parts


def make_learner(
    layout: RunLayout, parts: ModelParts | nn.Module, device: torch.device, policy_id: int
) -> LearnerBase:
    """The algorithm's learner of policy `policy_id`, training `parts` (an acting module alone:
    no learner-only modules).

    Raises:
        ValueError: the algorithm does not train (e.g. DUMMY_SAMPLER).
    """
    if layout.algo.make_learner is None:
        raise ValueError(f"algorithm {layout.algo.name} has no learner")
    if not isinstance(parts, ModelParts):
        parts = ModelParts(parts)
    extra = {"learner_modules": parts.learner_modules} if parts.learner_modules else {}
    learner = layout.algo.make_learner(layout.cfg, parts.acting, layout.buffers, device, policy_id, **extra)
    check_optimized_parameters(learner, layout.algo.name)
    return learner


def check_optimized_parameters(learner: LearnerBase, algo: str) -> None:
    """Every tensor an optimizer of `learner` updates belongs to its acting module or one of its
    `learner_modules`: those are what checkpoints save and the serial placement rolls back, and an
    optimizer's state holds no parameter values (a bare `log_alpha` would resume at its initial
    value with Adam's moments restored).

    Raises:
        ValueError: a tensor outside them, naming the optimizer and the fix.
    """
    owned = {id(t) for t in learner.model.parameters()}
    for module in learner.learner_modules.values():
        owned.update(id(t) for t in module.parameters())
    for name, optimizer in learner.optimizers.items():
        for group in optimizer.param_groups:
            for t in group["params"]:
                if id(t) not in owned:
                    raise ValueError(
                        f"algorithm {algo}: optimizer {name!r} updates a tensor of shape "
                        f"{tuple(t.shape)} that is neither in the acting module nor in "
                        "learner_modules, so checkpoints would not save it. Fix: hold it in an "
                        "nn.Module (e.g. an nn.Parameter attribute) listed in learner_modules."
                    )


def make_inference(
    layout: RunLayout,
    model: nn.Module,
    device: torch.device,
    policy_id: int,
    actor_offset: int = 0,
    run_actors: int = 0,
    own_model: bool = False,
) -> InferenceWorker:
    """An inference worker acting with the algorithm's `act` for policy `policy_id`; a Ray sampler
    node passes its first actor's run-wide id `actor_offset` and the run's `run_actors` (else the
    layout's own: `num_actors`). `own_model`: the model is the worker's own (an inference
    process), not the learner's; with it, on a CUDA device, `--cuda_graphs` may act (its choice
    logged)."""
    mixed_precision = resolve_mixed_precision(layout.cfg.mixed_precision, layout.cfg.algo, device, model)[0]
    graphs, why = cuda_graphs_choice(layout.cfg, layout.algo, device, mixed_precision, own_model)
    if device.type == "cuda":
        log.info("inference policy %d: CUDA graphs %s", policy_id, why if graphs else f"off: {why}")
    return InferenceWorker(
        model,
        layout.buffers,
        device,
        layout.algo.act,
        policy_id=policy_id,
        num_policies=layout.cfg.num_policies,
        reads_obs=layout.algo.act_reads_obs,
        num_actors=run_actors or num_actors(layout.cfg, layout.info),
        actor_offset=actor_offset,
        skip_obs_key=layout.cfg.central_value_state_key if layout.cfg.central_value else None,
        mixed_precision=mixed_precision,
        cuda_graphs=graphs,
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
    inference worker, and per learning policy (`surge.cfg.policy_roles`) a learner, keyed by policy
    id (none for algorithms that do not train, nor for frozen policies)."""

    layout: RunLayout
    models: list[nn.Module]  # each policy's acting module (`ModelParts.acting`)
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
    def model(self) -> nn.Module:
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
    configure_backends(cfg, device)
    parts = [make_model(cfg, info, device) for _ in range(cfg.num_policies)]
    models = [part.acting for part in parts]
    layout = make_layout(cfg, info, acting_state_size(models[0]))
    trains = layout.algo.trains
    learning = learning_policies(cfg) if trains else []
    learners = {p: make_learner(layout, parts[p], device, p) for p in learning}
    inferences = [make_inference(layout, m, device, p) for p, m in enumerate(models)]
    workers = [make_rollout_worker(layout, w) for w in range(cfg.num_workers)]
    return Components(layout, models, learners, inferences, workers, device)


__all__ = [
    "Components",
    "EnvInfo",
    "RunLayout",
    "blocks_per_split",
    "build_components",
    "configure_backends",
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
