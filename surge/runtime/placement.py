"""Placements: where the components run. Both answer the same calls from `TrainingRun`.

- `SerialPlacement` (`surge.runtime.serial`): everything in this process (`--serial_mode=True`).
- `AsyncPlacement` (`surge.runtime.async_placement`): rollout workers, inference workers and one
  learner per policy in processes over shared memory.

A checkpoint of a policy holds its model and learner state plus the run's counters;
`checkpoint_state` builds it wherever the learner lives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from torch import Tensor, nn

from surge.experiment.checkpoint import rng_state, set_rng_state
from surge.learning.base import LearnerBase
from surge.population.commands import Command, ReplacePolicy, SetHyperparams, SetRewardShaping
from surge.population.hyperparams import check_values
from surge.runtime.messages import SaveRefused
from surge.sampling.rollout_worker import EpisodeStats


@dataclass
class StepReport:
    """What a placement reports per `step()`: env steps (calls of env.step), finished episodes,
    each policy's learner statistics when one of its iterations finished, and the agent steps
    whose reward or observation was non-finite (replaced by 0, not trained on), env.step calls that
    raised (`env_faults`, the latest as `last_env_fault`; each env rebuilt) and worker processes
    replaced after a crash or hang (`worker_restarts`)."""

    env_steps: int = 0
    episodes: list[EpisodeStats] = field(default_factory=list)
    train_stats: dict[int, dict[str, float]] = field(default_factory=dict)
    nonfinite_rewards: int = 0
    nonfinite_obs: int = 0
    env_faults: int = 0
    last_env_fault: str = ""
    worker_restarts: int = 0


class Placement(Protocol):
    """Where the components run. `num_agents`: agent steps per env step; `frameskip`: frames per env step.

    What became of the checkpoints, complete once `close` returned: `final_written` holds the
    policies whose final checkpoint (`save("final", ...)`) was written; `save_refusals` lists every
    checkpoint not written because its state held a NaN or inf, oldest first (kind "final" for
    the final one)."""

    num_agents: int
    frameskip: int
    final_written: set[int]
    save_refusals: list[SaveRefused]

    def start(self) -> None:
        """Builds the components (and starts processes); restores the resume state if any."""
        ...

    def step(self) -> StepReport:
        """Advances the run a little (one sampling step, or up to ~0.1 s of reports) and reports."""
        ...

    def save(self, kind: str, counters: dict[str, Any], policy_id: int | None = None) -> None:
        """Writes a checkpoint of `kind` (checkpoint, best, milestone, or final = last regular one)
        for policy `policy_id`, or for every policy when None."""
        ...

    def set_policy_weights(self, policy_id: int, state_dict: dict[str, Tensor], policy_version: int) -> None:
        """Gives frozen policy `policy_id` (`surge.population.roles`) the model state `state_dict`;
        inference acts with it from its next batch on, stamping `policy_version`.

        Raises:
            ValueError: the policy learns (its learner owns its weights), or does not exist.
        """
        ...

    def policy_weights(self, policy_id: int) -> tuple[dict[str, Tensor], int]:
        """A CPU copy of policy `policy_id`'s current model state (a learner's as last published to
        inference) and its policy_version."""
        ...

    def set_env_frames(self, env_frames: int) -> None:
        """Tells the learners the run's env frames (for the learning-rate schedule)."""
        ...

    def limit_env_steps(self, env_steps: int) -> None:
        """The samplers take at most about `env_steps` more env steps (the rest of the frame
        budget): a run ends within one step of each split of its budget."""
        ...

    def set_progress(self, fn: Callable[[], None]) -> None:
        """`fn` is called between the optimizer steps of a batch trained in this process (the
        serial placement), so the progress line keeps coming during a long batch; the async
        placement trains in other processes and never calls it."""
        ...

    def send_command(self, cmd: Command) -> None:
        """Sends a command (`surge.population.commands`: `SetHyperparams`, `ReplacePolicy`) to a
        policy's learner, or `SetRewardShaping` to every rollout worker. The serial placement applies it at once (the run calls this between
        steps, so between batches); the async placement sends it to the learner process, which
        applies it in order with its batches and checkpoints.

        Raises:
            ValueError: an unknown policy id, or a bad hyper-parameter name or value.
        """
        ...

    def interrupt(self) -> None:
        """Called from the Ctrl+C / SIGTERM handler: the learners leave the batch they are training
        at their next optimizer step, so the stop is not held up by a long batch."""
        ...

    def close(self) -> None:
        """Stops everything the placement started; no process or shared memory is left."""
        ...


def checkpoint_state(model: nn.Module, learner: LearnerBase, counters: dict[str, Any]) -> dict[str, Any]:
    """The content of one policy's checkpoint: model, optimizer and policy_version, the run's
    counters (env_steps, env_frames, train_seconds, best_return) and the RNG states."""
    return {"model": model.state_dict(), "learner": learner.state_dict(), **counters, "rng": rng_state()}


def check_command(cmd: Command, num_policies: int, learning: list[int] | None = None) -> None:
    """Refuses a command the learners could not apply, before it is applied or sent.

    Args:
        cmd: the command.
        num_policies: `--num_policies`.
        learning: the policies with a learner (`surge.population.roles.learning_policies`; None:
            all). `SetHyperparams` and `ReplacePolicy` name learning policies only: a frozen
            policy has no learner to set or to export from.

    Raises:
        ValueError: an unknown policy id, a frozen policy in `SetHyperparams` / `ReplacePolicy`, a
            policy replaced by itself, or a bad hyper-parameter name or value
            (`surge.population.hyperparams.check_values`).
    """
    ids = [cmd.policy_id] + ([cmd.source_policy_id] if isinstance(cmd, ReplacePolicy) else [])
    for p in ids:
        if not 0 <= p < num_policies:
            raise ValueError(
                f"{type(cmd).__name__}: policy {p} does not exist (--num_policies={num_policies})"
            )
        if learning is not None and p not in learning and isinstance(cmd, (SetHyperparams, ReplacePolicy)):
            raise ValueError(f"{type(cmd).__name__}: policy {p} is frozen (no learner); learning: {learning}")
    if isinstance(cmd, ReplacePolicy) and cmd.source_policy_id == cmd.policy_id:
        raise ValueError(f"ReplacePolicy: policy {cmd.policy_id} cannot replace itself")
    if isinstance(cmd, SetHyperparams):
        check_values(cmd.values)
    elif isinstance(cmd, SetRewardShaping):
        if not isinstance(cmd.scheme, dict):
            raise ValueError(f"SetRewardShaping: the scheme must be a dict, got {type(cmd.scheme).__name__}")
    elif not isinstance(cmd, ReplacePolicy):
        raise ValueError(f"unknown command {cmd!r}")


def copy_policy_state(src: dict[str, Any], model: nn.Module, learner: LearnerBase) -> None:
    """`ReplacePolicy`'s effect on the replaced policy: `src` (`{"model": ..., "learner": ...}`,
    another policy's model and learner state) is loaded into `model` and `learner`, except that
    `learner.policy_version` increments instead of being copied."""
    model.load_state_dict(src["model"])
    learner.load_state_dict(src["learner"], keep_version=True)


def restore_policy(model: nn.Module, learner: LearnerBase, state: dict[str, Any]) -> None:
    """Loads model, learner and RNG state from a checkpoint dict, in the process that learns
    (after it seeded itself, so the restored RNG streams continue where they stopped)."""
    model.load_state_dict(state["model"])
    learner.load_state_dict(state["learner"])
    set_rng_state(state["rng"])
