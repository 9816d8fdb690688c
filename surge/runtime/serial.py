"""The serial placement (`--serial_mode=True`): rollout workers, inference and learners of the
async engine, called in turn in one process. Each policy's inference acts for every split at once in
one batched forward pass; each learner trains once its batcher has a batch."""

from __future__ import annotations

import logging
from typing import Any

import torch

from surge.cfg.config import Config
from surge.experiment.checkpoint import CheckpointManager
from surge.learning.algorithm import Feed
from surge.learning.batcher import Batcher
from surge.runtime.components import Components, build_components
from surge.runtime.placement import StepReport, checkpoint_state, restore_policy

log = logging.getLogger("surge")


class SerialSampler:
    """Collects experience from all workers into trajectory slots, in one process, and groups the
    finished blocks into each policy's batches."""

    def __init__(self, c: Components):
        self.c = c
        bpb = 1 if c.layout.algo.feed is Feed.REPLAY else c.layout.blocks_per_batch
        self.batchers = [Batcher(bpb, c.block_pool.block_size) for _ in range(c.cfg.num_policies)]
        self.waiting: set[tuple[int, int]] = set()  # (worker, split) with no free block for its next rollout
        for w in c.workers:
            w.reset()

    def step(self) -> None:
        """One env step of every split that has slots: inference for all of them, then env stepping.
        A split whose blocks are all with the learners waits until they release one."""
        c = self.c
        for w_idx, s in list(self.waiting):
            if c.workers[w_idx].start_next_rollout(s):
                self.waiting.discard((w_idx, s))
        active = [
            (i, s)
            for i, w in enumerate(c.workers)
            for s in range(len(w.splits))
            if (i, s) not in self.waiting
        ]
        if not active:
            return
        requests = [c.workers[i].policy_request(s) for i, s in active]
        if len(c.inferences) == 1:
            c.inferences[0].infer(requests)
        else:
            for p, inference in enumerate(c.inferences):
                mine = [
                    r
                    for (i, s), r in zip(active, requests, strict=True)
                    if p in c.workers[i].request_policies(s)
                ]
                if mine:
                    inference.infer(mine)
        for i, s in active:
            w = c.workers[i]
            finished = w.advance(s)
            if finished is not None:
                for p in w.hand_over(s, finished):
                    self.batchers[p].add(int(finished[0]))
                if not w.start_next_rollout(s):
                    self.waiting.add((i, s))

    def take(self, policy_id: int = 0) -> torch.Tensor | None:
        """The slots `[N]` int64 of policy `policy_id`'s next batch (exactly one iteration's worth of
        blocks), or None; give them back with `release` after training."""
        blocks = self.batchers[policy_id].take()
        return None if blocks is None else self._slots(blocks)

    def _slots(self, blocks: list[int]) -> torch.Tensor:
        n = self.c.block_pool.block_size
        return torch.cat([torch.arange(f, f + n) for f in blocks])

    def release(self, slots: torch.Tensor, policy_id: int = 0) -> None:
        """Returns the blocks of `slots` (as returned by `take`) from policy `policy_id`'s learner."""
        pool = self.c.block_pool
        for first in slots[:: pool.block_size].tolist():
            pool.release(first, policy_id)


class SerialPlacement:
    """All components in this process."""

    def __init__(
        self,
        cfg: Config,
        ckpts: list[CheckpointManager],
        resume_states: list[dict[str, Any] | None],
    ):
        self.cfg, self.ckpts, self.resume_states = cfg, ckpts, resume_states
        self.c: Components | None = None
        self.interrupted = False  # Ctrl+C / SIGTERM: see `interrupt`

    def start(self) -> None:
        self.c = c = build_components(self.cfg)
        self.num_agents, self.frameskip = c.info.agents_per_step, c.info.frameskip
        for p, learner in enumerate(c.learners):
            state = self.resume_states[p]
            if state is not None:
                restore_policy(c.models[p], learner, state)
                c.inferences[p].policy_version = learner.policy_version
        for learner in c.learners:
            learner.should_stop = self._interrupted
        self.sampler = SerialSampler(c)
        self.trains = c.layout.algo.trains and not self.cfg.sampler_only
        self.replay = c.layout.algo.feed is Feed.REPLAY
        self.env_frames = 0

    def step(self) -> StepReport:
        c = self.c
        assert c is not None
        self.sampler.step()
        report = StepReport()
        if self.trains:  # else the workers free their blocks themselves
            for p, learner in enumerate(c.learners):
                while not self.interrupted and (slots := self.sampler.take(p)) is not None:
                    if self.replay:  # copied out, released at once, trained at the replay ratio
                        learner.observe(learner.prepare_batch(slots))
                        self.sampler.release(slots, p)
                        stats = learner.train_replay(env_frames=self.env_frames)
                    else:
                        stats = learner.train(slots, env_frames=self.env_frames)
                        self.sampler.release(slots, p)
                    if stats is not None:
                        report.train_stats[p] = stats
                    c.inferences[p].policy_version = learner.policy_version
        for w in c.workers:
            report.env_steps += w.pop_env_steps()
            report.episodes += w.pop_episodes()
            rewards, obs = w.pop_nonfinite()
            report.nonfinite_rewards += rewards
            report.nonfinite_obs += obs
            faults, last = w.pop_env_faults()
            if faults:
                report.env_faults += faults
                report.last_env_fault = last
        return report

    def set_env_frames(self, env_frames: int) -> None:
        self.env_frames = env_frames

    def _interrupted(self) -> bool:
        return self.interrupted

    def interrupt(self) -> None:
        """The learner training now (this process's main thread, which the signal handler
        interrupted) leaves its batch at its next optimizer step."""
        self.interrupted = True

    def limit_env_steps(self, env_steps: int) -> None:
        """Nothing to do: the main loop checks the budget after every step of all splits."""

    def save(self, kind: str, counters: dict[str, Any], policy_id: int | None = None) -> None:
        c = self.c
        if c is None:
            return
        kind = "checkpoint" if kind == "final" else kind
        for p, learner in enumerate(c.learners):
            if policy_id is not None and p != policy_id:
                continue
            path = self.ckpts[p].save(
                checkpoint_state(c.models[p], learner, counters),
                learner.policy_version,
                counters["env_frames"],
                kind,
            )
            if path is not None:  # else CheckpointManager logged why
                log.info("Saved %s", path)

    def close(self) -> None:
        if self.c is not None:
            self.c.close()
