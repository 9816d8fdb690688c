"""The serial placement (`--serial_mode=True`): a small scheduler that calls the loops of the async
engine's processes in turn, in one process: the `RolloutLoop` steps every worker's splits, acting
through each policy's `InferenceLoop` (one batched forward pass over every split), then each
policy's `LearnerLoop` trains the batches its batcher has (`SerialSampler`, `_train_ready`).

Exact resume: at a stop (budget, Ctrl+C, SIGTERM) the placement also writes the sampler's state
(`sampler_state.pth` in the experiment folder: trajectory buffers, who holds each block, the
batches being collected, each split's step, the envs' whole state and the RNG streams), and a
resumed run whose checkpoints match it continues from there instead of resetting its envs: with
`--seed` it then computes what the uninterrupted run would have, bit for bit. A batch whose training
a stop interrupts is undone (weights, optimizer, normalisers and RNG as before it) and trained
again by the resumed run. docs/reliability.md says what cannot be restored.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from surge.cfg.config import Config
from surge.learning.algorithm import Feed
from surge.learning.replay_learner import ReplayLearnerBase
from surge.runtime.batch_snapshot import BatchSnapshot  # noqa: F401 - its old home (tests import it)
from surge.runtime.checkpoint import CheckpointManager, atomic_torch_save, rng_state, set_rng_state
from surge.runtime.commands import Command, SetHyperparams, SetRewardShaping
from surge.runtime.components import Components, build_components
from surge.runtime.data_parallel import DataParallel, join_data_parallel, leave_data_parallel
from surge.runtime.learner_loop import LearnerLoop
from surge.runtime.messages import SaveRefused
from surge.runtime.placement import (
    StepReport,
    check_command,
    checkpoint_state,
    restore_policy,
)
from surge.runtime.serial_sampler import SerialSampler
from surge.sampling.env_state import EnvStateUnsupported
from surge.sampling.rollout_loop import RolloutLoop

log = logging.getLogger("surge")


class SerialPlacement:
    """All components in this process.

    Args:
        cfg: the run's config.
        ckpts: each policy's checkpoints.
        resume_states: each policy's checkpoint to resume from (None: from scratch).
        sampler_state_file: where the sampler's state is written at a stop and read on resume (see
            the module docstring); None writes and reads none (`--no_writes`).
    """

    def __init__(
        self,
        cfg: Config,
        ckpts: list[CheckpointManager],
        resume_states: list[dict[str, Any] | None],
        sampler_state_file: Path | None = None,
    ):
        self.cfg, self.ckpts, self.resume_states = cfg, ckpts, resume_states
        self.sampler_state_file = sampler_state_file
        self.c: Components | None = None
        self.env_frames = 0  # the run's env frames as the training run last told (`set_env_frames`)
        #: the env frames the last step's batches trained at (its first `env_frames`): saved with the
        #: sampler state, so that a resumed run trains the batches a stop left at that step's frames
        #: (learning rate, epsilon), not at the checkpoint's, which count the whole step
        self.step_frames = 0
        self.resumed_step_frames: int | None = None
        self.interrupted = False  # Ctrl+C / SIGTERM: see `interrupt`
        self.stepping = False  # inside `step`: a save now (second Ctrl+C) cannot hold the sampler's state
        self.learner_loops: dict[int, LearnerLoop] = {}  # per learning policy (`start`)
        self.final_written: set[int] = set()  # see `Placement`
        self.checkpoints_written = [0] * cfg.num_policies  # see `Placement`
        self.save_refusals: list[SaveRefused] = []
        self.progress: Callable[[], None] = lambda: None  # see set_progress
        self.data_parallel: DataParallel | None = None  # the process group of a torchrun run

    def start(self) -> None:
        if self.cfg.num_torch_threads > 0:  # 0 keeps torch's own count (one thread per core)
            torch.set_num_threads(self.cfg.num_torch_threads)
        log.info(
            "Serial placement: %d torch intra-op thread(s) in this process (envs, inference and "
            "learning; --num_torch_threads, docs/threads.md)",
            torch.get_num_threads(),
        )
        self.c = c = build_components(self.cfg)
        self.num_agents, self.frameskip = c.info.agents_per_step, c.info.frameskip
        for p, learner in c.learners.items():
            state = self.resume_states[p]
            if state is not None:
                restore_policy(c.models[p], learner, state, f"{self.ckpts[p].name}'s checkpoint")
                c.inferences[p].policy_version = learner.policy_version
        for p, learner in c.learners.items():
            learner.should_stop = self._between_optimizer_steps
            # a data-parallel run (one policy): every rank starts from rank 0's state
            self.data_parallel = join_data_parallel(c.models[p], learner, c.device) or self.data_parallel
            if self.data_parallel is not None:  # a batch is never left in the middle (see DataParallel)
                learner.should_stop = self._progress_only
                c.inferences[p].policy_version = learner.policy_version
        # batches a stop cuts short are undone: the resumed run trains them whole (exact resume)
        self.learner_loops = {
            p: LearnerLoop(c.models[p], learner, p, rollback=c.layout.algo.feed is not Feed.REPLAY)
            for p, learner in c.learners.items()
        }
        sampler_state = self._matching_sampler_state()
        self.sampler = SerialSampler(c, sampler_state, keep_casts=True)  # `close` drops them
        if sampler_state is not None:
            set_rng_state(sampler_state["rng"])
            self.resumed_step_frames = sampler_state.get("step_env_frames")  # older states: none
            log.info(
                "Resumed the sampler where it stopped (envs, trajectories, RNG streams) from %s.",
                self.sampler_state_file,
            )
        self.trains = c.layout.algo.trains and not self.cfg.sampler_only
        self.replay = c.layout.algo.feed is Feed.REPLAY
        self.set_env_frames(self.env_frames)  # a resumed run acts and learns at its frame, not at 0

    def _matching_sampler_state(self) -> dict[str, Any] | None:
        """The saved sampler state when this run resumes from the very checkpoints saved with it
        (same env frame and policy versions), else None (the envs are reset, as in a new run)."""
        path, resumed = self.sampler_state_file, [s for s in self.resume_states if s is not None]
        if path is None or not resumed:
            return None
        if not path.exists():
            log.info("No sampler state saved (%s): the envs start from a reset.", path.name)
            return None
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - unreadable: resume as without it
            log.warning("Could not load the sampler state %s (%s): the envs start from a reset.", path, e)
            return None
        c = self.c
        assert c is not None
        ours = [
            (int(s["env_frames"]), int(s["learner"]["policy_version"])) if s is not None else None
            for p, s in enumerate(self.resume_states)
            if p in c.learners
        ]
        saved = [(int(state["env_frames"]), int(v)) for v in state["policy_versions"]]
        if ours != saved:
            log.warning(
                "The sampler state %s was saved with other checkpoints (env frame, policy version per "
                "policy: %s; resumed from %s), e.g. after a crash: the envs start from a reset and the run "
                "does not continue exactly.",
                path,
                saved,
                ours,
            )
            return None
        if "actor_ids" not in state and c.layout.algo.feed is Feed.REPLAY:
            # its pending trajectories would reach the replay with no column (actor id -1)
            log.warning(
                "The sampler state %s was saved by an older surge, without the trajectories' actor ids "
                "that a replay learner needs: the envs start from a reset and the run does not "
                "continue exactly.",
                path,
            )
            return None
        try:  # every env's state checked before any is restored: a refusal leaves them all fresh
            RolloutLoop.check_state_dict(c.workers, state)
        except ValueError as e:  # EnvStateRefused included (an older pickled env, another env)
            log.warning(
                "Not resuming the envs from the sampler state %s (%s): the envs start from a reset and "
                "the run does not continue exactly.",
                path,
                e,
            )
            return None
        return state

    def step(self) -> StepReport:
        c = self.c
        assert c is not None
        self.stepping = True
        report = StepReport()
        # batches a stop left untrained (a resumed run's first step) are trained before sampling, as
        # the uninterrupted run trained them right after the step that completed them, at its frames
        first, self.resumed_step_frames = self.resumed_step_frames, None
        self.step_frames = self.env_frames if first is None else first
        self._train_ready(report, self.step_frames)
        self.step_frames = self.env_frames
        self.sampler.step()
        self._train_ready(report, self.step_frames)
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
        self.stepping = False
        return report

    def _train_ready(self, report: StepReport, env_frames: int) -> None:
        """Trains every batch the batchers have (none once the run is stopping), at `env_frames`
        (the learning rate's and epsilon's schedules)."""
        c = self.c
        assert c is not None
        if not self.trains:  # the workers free their blocks themselves
            return
        dp = self.data_parallel
        for p, learner in c.learners.items():
            if self.replay and dp is None and not self.interrupted and isinstance(learner, ReplayLearnerBase):
                # updates a stop cut short (Ctrl+C in `train_replay`; owed by the restored counters)
                # run before the next block is stored, as the uninterrupted run ran them right
                # after the block before, at that step's frames: with --save_replay_buffer the
                # resume stays exact
                if learner.updates_due():
                    self._report(p, learner.train_replay(env_frames=env_frames), report)
            loop = self.learner_loops[p]
            while not self.interrupted and (slots := self.sampler.take(p)) is not None:
                # the ranks' round: all train this batch, or all stop (the round's frames: the
                # same learning rate on every rank)
                batch_frames = loop.begin_round(dp, self.env_frames, env_frames, c.models[p])
                if batch_frames is None:
                    self.sampler.release(slots, p)
                    report.data_parallel_stopped = True
                    continue
                if self.replay:  # copied out, released at once, trained at the replay ratio
                    stats = loop.observe(
                        learner.prepare_batch(slots),
                        functools.partial(self.sampler.release, slots, p),
                        env_frames,
                    )
                else:
                    stats = loop.train(slots, batch_frames)
                    if stats.get("rolled_back"):  # undone: the resumed run trains it whole
                        self.sampler.put_back(slots, p)
                    else:
                        self.sampler.release(slots, p)
                self._report(p, stats, report)

    def _report(self, policy_id: int, stats: dict[str, float] | None, report: StepReport) -> None:
        """Puts a trained batch's `stats` (None: no update was due) in `report`; inference acts
        with the learner's new `policy_version`."""
        c, dp = self.c, self.data_parallel
        assert c is not None
        learner = c.learners[policy_id]
        if stats is not None:
            report.train_stats[policy_id] = self.learner_loops[policy_id].finish_stats(
                stats, dp, self.env_frames
            )
        c.inferences[policy_id].policy_version = learner.policy_version

    def set_env_frames(self, env_frames: int) -> None:
        self.env_frames = env_frames
        if self.c is not None:
            for inference in self.c.inferences:
                inference.env_frames = env_frames

    def send_command(self, cmd: Command) -> None:
        """Applies `cmd` at once (see `Placement.send_command`); inference shares the models, so
        it acts with replaced weights from the next step on.

        Raises:
            ValueError: see `check_command`; or the run does not train (no learners).
        """
        c = self.c
        assert c is not None
        check_command(cmd, self.cfg.num_policies, sorted(c.learners))
        if isinstance(cmd, SetRewardShaping):
            for w in c.workers:
                w.set_policy_reward_shaping(cmd.policy_id, cmd.scheme)
            return
        if not c.learners:
            raise ValueError(f"{type(cmd).__name__}: --algo={self.cfg.algo} has no learners to command")
        loop = self.learner_loops[cmd.policy_id]
        if isinstance(cmd, SetHyperparams):
            loop.set_hyperparams(cmd.values)
            return
        # deep copies: the two policies must not share Adam's moment tensors
        state = copy.deepcopy(self.learner_loops[cmd.source_policy_id].export())
        c.inferences[cmd.policy_id].policy_version = loop.replace(state)
        self.sampler.drop_casts()  # (the replaced weights' casts)

    def set_policy_weights(
        self, policy_id: int, state_dict: dict[str, torch.Tensor], policy_version: int
    ) -> None:
        """Loads `state_dict` into frozen policy `policy_id`'s model; its next actions use it and
        are stamped `policy_version`.

        Raises:
            ValueError: the policy learns (its learner owns its weights), or the id is out of range.
        """
        c = self._frozen_check(policy_id)
        c.models[policy_id].load_state_dict(state_dict)
        c.inferences[policy_id].policy_version = int(policy_version)
        self.sampler.drop_casts()  # (the old weights' casts)

    def policy_weights(self, policy_id: int) -> tuple[dict[str, torch.Tensor], int]:
        """A copy (on the CPU) of policy `policy_id`'s current model state, and its policy_version."""
        c = self.c
        assert c is not None
        if not 0 <= policy_id < len(c.models):
            raise ValueError(f"no policy {policy_id}")
        state = {k: v.detach().to("cpu", copy=True) for k, v in c.models[policy_id].state_dict().items()}
        learner = c.learners.get(policy_id)
        version = learner.policy_version if learner is not None else c.inferences[policy_id].policy_version
        return state, int(version)

    def _frozen_check(self, policy_id: int) -> Components:
        c = self.c
        assert c is not None
        if not 0 <= policy_id < len(c.models):
            raise ValueError(f"no policy {policy_id}")
        if policy_id in c.learners:
            raise ValueError(f"policy {policy_id} learns: only a frozen policy's weights are set by the run")
        return c

    def _between_optimizer_steps(self) -> bool:
        """The learners' `should_stop`: reports progress (a batch can take longer than the
        progress line's interval) and says whether the run is stopping."""
        self.progress()
        return self.interrupted

    def _progress_only(self) -> bool:
        """The learners' `should_stop` in a data-parallel run: reports progress; never stops in
        the middle of a batch (the other ranks take the same steps); the stop comes at the next
        round."""
        self.progress()
        return False

    def set_progress(self, fn: Callable[[], None]) -> None:
        self.progress = fn

    def interrupt(self) -> None:
        """The learner training now (this process's main thread, which the signal handler
        interrupted) leaves its batch at its next optimizer step."""
        self.interrupted = True

    def limit_env_frames(self, env_frames: int) -> None:
        """Nothing to do: the main loop checks the budget after every step of all splits."""

    def save(self, kind: str, counters: dict[str, Any], policy_id: int | None = None) -> None:
        c = self.c
        if c is None:
            return
        final = kind == "final"
        if final:
            self._leave_data_parallel()
        for p, learner in c.learners.items():
            if policy_id is not None and p != policy_id:
                continue
            path = self.ckpts[p].save(
                checkpoint_state(c.models[p], learner, counters),
                learner.policy_version,
                counters["env_frames"],
                "checkpoint" if final else kind,
            )
            if path is not None:
                # a best checkpoint is replaced every few seconds while the return climbs: debug, as
                # Sample Factory logs it (surge.runtime.best_checkpoint logs the first one)
                (log.debug if kind == "best" else log.info)("Saved %s", path)
                if final:
                    self.final_written.add(p)
                if final or kind == "checkpoint":
                    self.checkpoints_written[p] += 1
            else:  # CheckpointManager logged why
                self.save_refusals.append(
                    SaveRefused(p, kind, self.ckpts[p].last_refusal, int(counters["env_frames"]))
                )
        # a refused final checkpoint leaves the previous one the latest: the sampler state that
        # matches it (if any) stays, a new one would match no checkpoint
        final_refused = any(r.kind == "final" for r in self.save_refusals)
        if final and c.learners and policy_id in (None, max(c.learners)) and not final_refused:
            self._save_sampler_state(int(counters["env_frames"]))

    def _save_sampler_state(self, env_frames: int) -> None:
        """Writes the sampler's state beside the final checkpoints (see the module docstring), or,
        when it cannot be saved, removes an older one and says why."""
        path, c = self.sampler_state_file, self.c
        if path is None or c is None:
            return
        why = ""
        if self.stepping:
            why = "the run was aborted in the middle of a step"
        else:
            try:
                state = self.sampler.state_dict()
            except EnvStateUnsupported as e:
                why = f"the env's state cannot be saved: {e}"
        if why:
            path.unlink(missing_ok=True)
            log.warning(
                "Not saving the sampler state (%s): the resumed run starts its envs from a reset and "
                "does not continue exactly (docs/reliability.md).",
                why,
            )
            return
        state.update(
            env_frames=env_frames,
            step_env_frames=self.step_frames,
            policy_versions=[lr.policy_version for lr in c.learners.values()],
            rng=rng_state(),
        )
        atomic_torch_save(state, path)
        log.info("Saved the sampler state %s", path)

    def _leave_data_parallel(self) -> None:
        """Stops this rank's training rounds (the others stop at their next one), checks the ranks
        still hold the same weights, and leaves the process group. Once per run."""
        dp, c = self.data_parallel, self.c
        if dp is None or c is None:
            return
        self.data_parallel = None
        leave_data_parallel(dp, self.env_frames, c.models[next(iter(c.learners))])

    def close(self) -> StepReport:
        """See `Placement.close` (nothing runs between steps here: an empty report)."""
        try:
            self._leave_data_parallel()
        finally:
            sampler = getattr(self, "sampler", None)  # (made by `start`)
            if sampler is not None:
                sampler.drop_casts()
            if self.c is not None:
                self.c.close()
        return StepReport()
