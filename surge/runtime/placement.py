"""Placements: where the components run. Both answer the same calls from `TrainingRun`.

- `SerialPlacement` (`surge.runtime.serial`): everything in this process (`--serial_mode=True`).
- `AsyncPlacement` (`surge.runtime.async_placement`): rollout workers, inference workers and one
  learner per policy in processes over shared memory.

A checkpoint of a policy holds its model and learner state plus the run's counters;
`checkpoint_state` builds it wherever the learner lives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from torch import Tensor, nn

from surge.cfg.policy_hyperparams import PolicyHyperparams, check_values
from surge.learning.base import LearnerBase
from surge.runtime.checkpoint import rng_state, set_rng_state
from surge.runtime.checkpoint_fit import check_fits
from surge.runtime.commands import Command, ReplacePolicy, SetHyperparams, SetRewardShaping
from surge.runtime.messages import SaveRefused
from surge.sampling.rollout_worker import EpisodeStats

if TYPE_CHECKING:  # types only
    from surge.cfg.config import Config
    from surge.runtime.checkpoint import CheckpointManager
    from surge.runtime.shared_state import SharedWeights

log = logging.getLogger("surge")


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
    #: a data-parallel run: a rank stopped training (`surge.runtime.data_parallel`), so this
    #: rank stops too
    data_parallel_stopped: bool = False


class Placement(Protocol):
    """Where the components run. `num_agents`: agent steps per env step; `frameskip`: frames per env step.

    What became of the checkpoints, complete once `close` returned: `final_written` holds the
    policies whose final checkpoint (`save("final", ...)`) was written; `save_refusals` lists every
    checkpoint not written because its state held a NaN or inf, oldest first (kind "final" for
    the final one). `checkpoints_written[p]` counts policy `p`'s regular checkpoints (kinds
    checkpoint and final) written so far, as the placement has heard of them: a checkpoint asked
    for is on disk once the count passed its value at the asking."""

    num_agents: int
    frameskip: int
    final_written: set[int]
    checkpoints_written: list[int]
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

    def limit_env_frames(self, env_frames: int) -> None:
        """The samplers take at most about `env_frames` more env frames (the rest of the frame
        budget; env steps x frameskip): a run ends within one step of each split of its budget.
        May be called before `start` (the samplers then never step past it, however slow the
        main process is after the start)."""
        ...

    def set_progress(self, fn: Callable[[], None]) -> None:
        """`fn` is called between the optimizer steps of a batch trained in this process (the
        serial placement), so the progress line keeps coming during a long batch; the async
        placement trains in other processes and never calls it."""
        ...

    def send_command(self, cmd: Command) -> None:
        """Sends a command (`surge.runtime.commands`: `SetHyperparams`, `ReplacePolicy`) to a
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

    def close(self) -> StepReport:
        """Stops everything the placement started; no process or shared memory is left. Returns
        the episodes reported while it stopped, after the last `step` (none where nothing runs on
        its own: the serial placement). Env steps taken then are not counted: the run's frames
        stay those of its final checkpoint, written before the stop."""
        ...


def policy_state(model: nn.Module, learner: LearnerBase) -> dict[str, Any]:
    """One policy's trained state: "model" (the acting module's state), "learner" (optimizers,
    policy_version, hyper-parameters: `LearnerBase.state_dict`) and, when the learner has
    learner-only modules (critics, target networks), "learner_modules" ({name: state})."""
    out = {"model": model.state_dict(), "learner": learner.state_dict()}
    if learner.learner_modules:
        out["learner_modules"] = {k: m.state_dict() for k, m in learner.learner_modules.items()}
    return out


def load_policy_state(
    state: dict[str, Any],
    model: nn.Module,
    learner: LearnerBase,
    keep_version: bool = False,
    what: str = "the checkpoint",
) -> None:
    """Loads `policy_state`'s content into `model` and `learner` (its learner modules included;
    one the state lacks, e.g. in a final checkpoint written for a dead learner without an earlier
    one, keeps its fresh weights, with a warning). `keep_version`: see `LearnerBase.load_state_dict`;
    `what` names the state in errors.

    Raises:
        KeyError: the state holds a learner module this learner does not have.
        CheckpointMismatch: the saved weights are of another network (`check_policy_state_fits`).
    """
    check_policy_state_fits(state, model, learner.learner_modules, what)
    model.load_state_dict(state["model"])
    saved = state.get("learner_modules") or {}
    unknown = set(saved) - set(learner.learner_modules)
    if unknown:
        raise KeyError(f"the state holds learner module(s) {sorted(unknown)} this learner does not have")
    for name, module in learner.learner_modules.items():
        if name in saved:
            module.load_state_dict(saved[name])
        else:
            log.warning(
                "Learner module %r is not in the state being loaded: it keeps its fresh weights.", name
            )
    learner.load_state_dict(state["learner"], keep_version=keep_version)


def check_policy_state_fits(
    state: dict[str, Any], model: nn.Module, learner_modules: dict[str, nn.Module], what: str
) -> None:
    """Checks that `policy_state`'s weights fit `model` and the learner modules it saved (a module
    the state lacks is not checked: it keeps its fresh weights).

    Raises:
        CheckpointMismatch: naming `what`, the part (model or learner module) and the difference.
    """
    check_fits(model, state["model"], f"{what} (model)")
    for name, saved in (state.get("learner_modules") or {}).items():
        if name in learner_modules:
            check_fits(learner_modules[name], saved, f"{what} (learner module {name!r})")


def published_policy_state(
    cfg: Config,
    policy_id: int,
    model_state: dict[str, Tensor],
    policy_version: int,
    previous: dict[str, Any] | None,
) -> dict[str, Any]:
    """A `policy_state` written without a learner (a dead learner's final checkpoint, in the main
    process): the acting module's `model_state` (the weights last published), and the learner
    state and learner modules of `previous` (its latest checkpoint) with `policy_version`; without
    `previous`, no optimizer and no learner module state (a resumed learner starts them fresh)
    and the policy's configured hyper-parameters."""
    if previous is not None:
        learner = {**previous["learner"], "policy_version": int(policy_version)}
        out = {"model": model_state, "learner": learner}
        if previous.get("learner_modules"):
            out["learner_modules"] = previous["learner_modules"]
        return out
    hp = PolicyHyperparams.from_cfg(cfg, policy_id).to_dict()
    return {"model": model_state, "learner": {"policy_version": int(policy_version), "hyperparams": hp}}


def checkpoint_state(model: nn.Module, learner: LearnerBase, counters: dict[str, Any]) -> dict[str, Any]:
    """The content of one policy's checkpoint: `policy_state` (model, learner state, learner
    modules), the run's counters (env_steps, env_frames, train_seconds, best_return) and the RNG
    states."""
    return {**policy_state(model, learner), **counters, "rng": rng_state()}


def check_command(cmd: Command, num_policies: int, learning: list[int] | None = None) -> None:
    """Refuses a command the learners could not apply, before it is applied or sent.

    Args:
        cmd: the command.
        num_policies: `--num_policies`.
        learning: the policies with a learner (`surge.cfg.policy_roles.learning_policies`; None:
            all). `SetHyperparams` and `ReplacePolicy` name learning policies only: a frozen
            policy has no learner to set or to export from.

    Raises:
        ValueError: an unknown policy id, a frozen policy in `SetHyperparams` / `ReplacePolicy`, a
            policy replaced by itself, or a bad hyper-parameter name or value
            (`surge.cfg.policy_hyperparams.check_values`).
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
    """`ReplacePolicy`'s effect on the replaced policy: `src` (another policy's `policy_state`:
    model, learner state, learner modules) is loaded into `model` and `learner`, except that
    `learner.policy_version` increments instead of being copied."""
    load_policy_state(src, model, learner, keep_version=True)


def restore_policy(
    model: nn.Module, learner: LearnerBase, state: dict[str, Any], what: str = "the checkpoint"
) -> None:
    """Loads model, learner modules, learner and RNG state from a checkpoint dict, in the process
    that learns (after it seeded itself, so the restored RNG streams continue where they stopped).
    `what` names the checkpoint in a `CheckpointMismatch`."""
    load_policy_state(state, model, learner, what=what)
    if "rng" in state:  # a data-parallel rank > 0 keeps its own streams (seeded --seed + rank)
        set_rng_state(state["rng"])


def save_published(
    cfg: Config,
    p: int,
    weights: SharedWeights,
    ckpt: CheckpointManager,
    model: nn.Module,
    counters: dict[str, Any],
) -> bool | SaveRefused:
    """The final checkpoint of policy `p` whose learner died: the weights it last published in
    shared memory `weights` (what inference acted with; loaded into `model`, the acting module's
    layout), with the learner state (optimizers, hyper-parameters) and learner modules of its
    latest checkpoint in `ckpt` (none when there is none: a resumed learner then starts them
    fresh). No learner is built, so no optimizer, learner module or replay buffer is allocated.
    Logs what was written, or why nothing was. Returns True when written, False when there was
    nothing to write, the `SaveRefused` when `ckpt` refused it (non-finite weights)."""
    loaded = weights.load_into(model) if weights.read_version() > 0 else None
    if loaded is None:
        log.error(
            "Learner %d died %s: no final checkpoint; %s stays the latest.",
            p,
            "before publishing any update" if weights.read_version() == 0 else "while publishing its weights",
            ckpt.latest() or "none",
        )
        return False
    previous = ckpt.load("latest")
    state = published_policy_state(cfg, p, model.state_dict(), loaded, previous)
    path = ckpt.save({**state, **counters, "rng": rng_state()}, loaded, counters["env_frames"])
    if path is None:  # CheckpointManager logged why
        return SaveRefused(p, "final", ckpt.last_refusal, int(counters["env_frames"]))
    log.warning(
        "Learner %d died: wrote the final checkpoint %s from the weights it last published "
        "(policy version %d, env frame %d), with the optimizer state of %s.",
        p,
        path,
        loaded,
        counters["env_frames"],
        f"policy version {int(previous['learner']['policy_version'])}'s checkpoint"
        if previous is not None
        else "a fresh optimizer (no earlier checkpoint)",
    )
    return True
