"""What each child process of the async placement is given: one context object per process,
holding the run's shared objects (`SharedContext`) and the queues of its role. Contexts are
pickled once, at spawn; their tensors are in shared memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from surge.data.block_pool import BlockPool
from surge.data.trajectory import TrajectoryBuffers
from surge.learning.algorithm import get_algorithm
from surge.learning.run_flags import rebuild_cfg
from surge.runtime.components import EnvInfo, RunLayout
from surge.runtime.lockstep import LockstepShared
from surge.runtime.shared_state import SharedWeights
from surge.runtime.stop_flag import StopFlag


@dataclass
class SharedContext:
    """The run's shared objects, the same for every child.

    Attributes:
        cfg_values: the config as `Config.to_dict()` (the family's config class is rebuilt in the child).
        info: the env's spaces and agent counts.
        rnn_state_size: width of the stored recurrent state.
        buffers, block_pool: the trajectory buffers and their blocks' holder flags.
        weights: one `SharedWeights` per policy.
        env_frames: `[1]` int64, the run's env frames (the learning-rate schedule reads it).
        env_steps: `[num_workers]` int64, env steps (calls of env.step of each (sub-)env) each rollout
            worker index took so far in this run, written by the worker after every step; the main
            process counts frames from it (exact and current, where reports would lag).
        env_steps_budget: `[1]` int64, the env steps (summed over `env_steps`) after which rollout
            workers stop stepping: the frame budget, so a run ends within one step of every split
            of it.
        heartbeats: `[num_workers + num_policies x policy_workers_per_policy]` float64: the
            `time.monotonic()` of each rollout worker's (then each inference worker's, policy-major)
            latest loop iteration, by which the main process tells a hung worker.
        inference_generation: `[num_policies x policy_workers_per_policy]` int64, bumped by the main
            process when it replaced that inference worker (its unanswered requests were lost:
            rollout workers send theirs again).
        inference_restarts: `[1]` int64, the sum of `inference_generation` (one cheap check per
            rollout loop iteration).
        learner_heartbeats: `[num_policies]` float64: the `time.monotonic()` of each learner's
            latest sign of life (a poll of its queues while no batch or checkpoint is in progress,
            the start or end of one, an optimizer step); 0 before its loop starts.
        report_queue: children -> main process (`surge.runtime.messages`).
        stop_flag: set by the main process to stop every loop (`surge.runtime.stop_flag`).
        actor_offset, run_actors: a Ray sampler node's first actor's run-wide id and the run's
            acting agents over all nodes (`ActContext`); 0 and 0 (this layout's own) elsewhere.
        lockstep: with `--deterministic=True`, the weight slots inference acts with and the rounds
            (0-based rollouts, counted per split) each slot may act on (`surge.runtime.lockstep`);
            None otherwise.
    """

    cfg_values: dict[str, Any]
    info: EnvInfo
    rnn_state_size: int
    buffers: TrajectoryBuffers
    block_pool: BlockPool
    weights: list[SharedWeights]
    env_frames: Tensor
    env_steps: Tensor
    env_steps_budget: Tensor
    heartbeats: Tensor
    inference_generation: Tensor
    inference_restarts: Tensor
    learner_heartbeats: Tensor
    report_queue: Any
    stop_flag: StopFlag
    actor_offset: int = 0
    run_actors: int = 0
    lockstep: LockstepShared | None = None

    def inference_index(self, policy_id: int, index: int) -> int:
        """Position of inference worker `index` of policy `policy_id` in `inference_generation`
        (and, after the rollout workers, in `heartbeats`)."""
        return policy_id * (len(self.inference_generation) // len(self.weights)) + index

    def layout(self) -> RunLayout:
        """The run's layout in this process (the config rebuilt from its values)."""
        cfg = rebuild_cfg(self.cfg_values)
        return RunLayout(
            cfg, get_algorithm(cfg.algo), self.info, self.rnn_state_size, self.block_pool, self.buffers
        )


@dataclass
class LearnerContext:
    """A learner process: trains policy `policy_id`, reads `BlockReady` from `learner_queue` and
    `SaveCommand`/`StopCommand` from `command_queue`; checkpoints in `ckpt_folder`, resumes from its
    latest when `resume`."""

    shared: SharedContext
    policy_id: int
    ckpt_folder: str
    resume: bool
    learner_queue: Any
    command_queue: Any


@dataclass
class InferenceContext:
    """Inference worker `index` of policy `policy_id`: `PolicyRequest`s from `request_queue`,
    `ActionsReady` to `worker_queues[worker_idx]`."""

    shared: SharedContext
    policy_id: int
    index: int
    request_queue: Any
    worker_queues: list[Any]


@dataclass
class RolloutContext:
    """Rollout worker `worker_idx` (its `incarnation`-th process): requests go to
    `request_queues[policy]`, replies come on `worker_queue`, finished blocks go to
    `learner_queues[policy]`. `reward_shaping`: each policy's scheme set so far
    (`SetRewardShaping`), for a worker started after it was sent."""

    shared: SharedContext
    worker_idx: int
    incarnation: int
    request_queues: list[Any]
    worker_queue: Any
    learner_queues: list[Any]
    reward_shaping: dict[int, dict] = field(default_factory=dict)
