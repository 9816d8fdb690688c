"""Placements: where the components run. Both answer the same calls from `TrainingRun`.

- `SerialPlacement`: everything in this process (`--serial_mode=True`).
- `AsyncPlacement` (`surge.runtime.async_placement`): rollout workers, inference and learner in
  processes over shared memory.

A checkpoint holds the learner's state plus the run's counters; `learner_checkpoint_state` builds it
wherever the learner lives.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from torch import nn

from surge.experiment.checkpoint import CheckpointManager, rng_state, set_rng_state
from surge.learning.learner import Learner
from surge.runtime.components import Components, build_components, traj_per_iteration
from surge.runtime.serial import SerialSampler
from surge.sampling.rollout_worker import EpisodeStats

log = logging.getLogger("surge")


@dataclass
class StepReport:
    """What a placement reports per `step()`: env steps (calls of env.step), finished episodes,
    and the learner's statistics when an iteration finished."""

    env_steps: int = 0
    episodes: list[EpisodeStats] = field(default_factory=list)
    train_stats: dict[str, float] | None = None


class Placement(Protocol):
    """Where the components run. `num_agents`: agent steps per env step; `frameskip`: frames per env step."""

    num_agents: int
    frameskip: int

    def start(self) -> None:
        """Builds the components (and starts processes); restores the resume state if any."""
        ...

    def step(self) -> StepReport:
        """Advances the run a little (one sampling step, or up to ~0.1 s of reports) and reports."""
        ...

    def save(self, kind: str, counters: dict[str, Any]) -> None:
        """Writes a checkpoint of `kind` (checkpoint, best, milestone, or final = last regular one)."""
        ...

    def set_env_frames(self, env_frames: int) -> None:
        """Tells the learner the run's env frames (for the learning-rate schedule)."""
        ...

    def close(self) -> None:
        """Stops everything the placement started; no process or shared memory is left."""
        ...


def learner_checkpoint_state(model: nn.Module, learner: Learner, counters: dict[str, Any]) -> dict[str, Any]:
    """The content of a checkpoint: model, optimizer and policy_version, the run's counters
    (env_steps, env_frames, train_seconds, best_return) and the RNG states."""
    return {"model": model.state_dict(), "learner": learner.state_dict(), **counters, "rng": rng_state()}


def restore_learner(model: nn.Module, learner: Learner, state: dict[str, Any]) -> None:
    """Loads model, learner and RNG state from a checkpoint dict, in the process that learns
    (after it seeded itself, so the restored RNG streams continue where they stopped)."""
    model.load_state_dict(state["model"])
    learner.load_state_dict(state["learner"])
    set_rng_state(state["rng"])


class SerialPlacement:
    """All components in this process (see `surge.runtime.serial`)."""

    def __init__(
        self,
        cfg: Any,
        ckpt: CheckpointManager,
        resume_state: dict[str, Any] | None,
        random_actions: bool = False,
    ):
        self.cfg, self.ckpt, self.resume_state = cfg, ckpt, resume_state
        self.random_actions = random_actions
        self.c: Components | None = None

    def start(self) -> None:
        self.c = c = build_components(self.cfg)
        self.num_agents, self.frameskip = c.info.agents_per_step, c.info.frameskip
        if self.resume_state is not None:
            restore_learner(c.model, c.learner, self.resume_state)
            c.inference.policy_version = c.learner.policy_version
        c.inference.random_actions = self.random_actions
        self.sampler = SerialSampler(c)
        self.per_iteration = traj_per_iteration(self.cfg)
        self.env_frames = 0

    def step(self) -> StepReport:
        c = self.c
        self.sampler.step()
        report = StepReport()
        slots = self.sampler.take(self.per_iteration)
        if slots is not None and self.cfg.sampler_only:
            self.sampler.release(slots)
        elif slots is not None:
            report.train_stats = c.learner.train(slots, env_frames=self.env_frames)
            self.sampler.release(slots)
            c.inference.policy_version = c.learner.policy_version
        for w in c.workers:
            report.env_steps += w.pop_env_steps()
            report.episodes += w.pop_episodes()
        return report

    def set_env_frames(self, env_frames: int) -> None:
        self.env_frames = env_frames

    def save(self, kind: str, counters: dict[str, Any]) -> None:
        c = self.c
        kind = "checkpoint" if kind == "final" else kind
        path = self.ckpt.save(
            learner_checkpoint_state(c.model, c.learner, counters),
            c.learner.policy_version,
            counters["env_frames"],
            kind,
        )
        log.info("Saved %s", path)

    def close(self) -> None:
        if self.c is not None:
            self.c.close()
