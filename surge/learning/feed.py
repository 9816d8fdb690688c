"""How experience reaches a learner (`Algorithm.feed`), decided in this one place.

An algorithm's feed says how its trajectory blocks travel and so everything that follows from it:
how many blocks each (worker, split) owns (`blocks_per_split`), what one learner's batch is
(`make_batcher`), how many trajectories a learner holds for an iteration (the memory estimate,
`iteration_trajectories`) and, for a replay, how many columns (acting agents) its buffer has
(`num_columns`, the inverse of the pool's sizing).

- ON_POLICY: a learner holds a batch's trajectory blocks until it trained on them; that
  back-pressure bounds the policy lag. The pool is sized for the batches the learners hold.
- REPLAY: a learner copies each block into its replay buffer and releases it at once, training at
  a replay ratio. A split needs one block it fills and one on its way to the learner.
"""

from __future__ import annotations

import enum
import math

from surge.cfg.config import Config, minibatches_to_accumulate
from surge.cfg.policy_roles import learning_policies
from surge.learning.batcher import Batcher, traj_per_iteration


class Feed(enum.Enum):
    """How finished trajectory blocks reach the learner (see the module docstring)."""

    ON_POLICY = "on_policy"
    REPLAY = "replay"

    def blocks_per_split(self, cfg: Config, num_agents: int) -> int:
        """Trajectory blocks each (worker, split) owns, for envs of `num_agents` agents.

        ON_POLICY: a learner holds a batch's blocks until it has trained on it, up to an
        iteration's worth times the accumulation Sample Factory allows (`minibatches_to_accumulate`:
        -1 = 2 x num_batches_per_iteration, 0 = none), while each split keeps one in progress; with
        every block held, collection pauses. With several policies each learner waits for its own
        batch, so the pool holds as much for each learning policy (a frozen one holds none): the
        trajectories learners short of a batch hold (fewer than a batch each,
        `surge.data.block_pool`) never leave every split without a rollout's worth of free slots.

        REPLAY: a split needs one block it fills and one on its way to the learner (queued to be
        copied), so the pool holds `min_traj_buffers_per_worker` (at least 2) blocks per split,
        one more with several policies, whatever the batch size or accumulation."""
        if self is Feed.REPLAY:
            return max(2, cfg.min_traj_buffers_per_worker) + (cfg.num_policies > 1)
        agents_per_split = cfg.num_envs_per_worker // cfg.worker_num_splits * num_agents
        owners = cfg.num_workers * cfg.worker_num_splits
        learners = len(learning_policies(cfg))
        per_iteration = traj_per_iteration(cfg, num_agents)
        per_iteration_blocks = math.ceil(per_iteration / agents_per_split) * learners
        # one block more per owner when batches split blocks (the batcher takes exactly an
        # iteration's trajectories): a learner then holds part of a block between batches.
        # Synchronous, one more with several policies too (frozen ones included: learners hold
        # single trajectories). In both cases the free slots of an owner can fall short of a block
        # while no learner has its batch yet; with the spare block, every owner waiting for one
        # means the learners hold a batch.
        splits_blocks = per_iteration % agents_per_split != 0
        acc = minibatches_to_accumulate(cfg)
        if acc == 0:  # synchronous: collection waits while the learners hold every block
            return max(1, math.ceil(per_iteration_blocks / owners)) + int(
                splits_blocks or cfg.num_policies > 1
            )
        iterations = 2 if acc < 0 else math.ceil(acc / cfg.num_batches_per_iteration)
        held = math.ceil(per_iteration_blocks * iterations / owners)
        return max(cfg.min_traj_buffers_per_worker, held + 1 + int(splits_blocks))

    def make_batcher(self, cfg: Config, block_size: int, num_agents: int) -> Batcher:
        """A learner's batcher: an iteration's trajectories per batch (ON_POLICY,
        `traj_per_iteration`), or each arrival whole as it comes (REPLAY)."""
        replay = self is Feed.REPLAY
        per_batch = 1 if replay else traj_per_iteration(cfg, num_agents)
        return Batcher(per_batch, block_size, whole_arrivals=replay)

    def iteration_trajectories(self, cfg: Config) -> int:
        """Trajectories one learner holds for an iteration, for the memory estimate:
        `ceil(batch_size x num_batches_per_iteration / rollout)` (ON_POLICY), 0 for REPLAY (its
        blocks are copied out, never held as batches; the replay's own bytes are
        `Algorithm.replay_bytes`)."""
        if self is Feed.REPLAY:
            return 0
        return -(-cfg.batch_size * cfg.num_batches_per_iteration // cfg.rollout)

    def num_columns(self, cfg: Config, num_slots: int) -> int:
        """REPLAY: the run's acting agents (`num_workers * num_envs_per_worker * num_agents`, one
        replay column each) of a pool of `num_slots` trajectory slots sized by `blocks_per_split`
        (`num_slots = owners * blocks_per_split * envs_per_split * num_agents`).

        Raises:
            ValueError: ON_POLICY, or `num_slots` is not a REPLAY pool of this config.
        """
        owners = cfg.num_workers * cfg.worker_num_splits
        per_agent = (
            owners * self.blocks_per_split(cfg, 1) * (cfg.num_envs_per_worker // cfg.worker_num_splits)
        )
        if self is not Feed.REPLAY or per_agent <= 0 or num_slots % per_agent:
            raise ValueError(
                f"{num_slots} trajectory slots are not a REPLAY pool of this config; pass num_columns"
            )
        return cfg.num_workers * cfg.num_envs_per_worker * (num_slots // per_agent)
