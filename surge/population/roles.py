"""Policy roles: which policies learn and which are frozen.

A *learning* policy has a learner (optimizer, batches, checkpoints) and receives the trajectories it
acted in. A *frozen* policy acts through inference like any other but has no learner, no optimizer,
no share of the trajectory blocks and no checkpoints: its weights are set by the run through
`Placement.set_policy_weights`, from

- `--frozen_policies ID:SOURCE`: SOURCE is a checkpoint file (its `model` weights), `random` (the
  policy's random initial weights) or `uniform` (the action-logits layer zeroed, so every legal
  action is equally likely: a uniformly random player, for Discrete and MultiDiscrete actions;
  for Box actions it gives the mean 0 and leaves the log-std as initialised), applied once at the start of the run;
- `--self_play=True`: policies 1..num_policies-1 are the opponent slots of the self-play pool
  (`surge.population.self_play`), which loads past snapshots of policy 0 into them.

Which policies learn is read from the config (`surge.cfg.policy_roles.learning_policies`); this
module sets the frozen policies' weights from their sources.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from surge.cfg.config import Config
from surge.cfg.policy_roles import BUILT_IN_SOURCES, frozen_sources
from surge.runtime.checkpoint_fit import state_differences


def source_weights(source: str, initial: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The model state a frozen policy starts with for `--frozen_policies` SOURCE.

    Args:
        source: `random`, `uniform` or a checkpoint path.
        initial: the policy's current (random initial) model state; not modified.
    Returns:
        a state dict of `initial`'s layout.
    Raises:
        ValueError: the checkpoint holds no `model` weights, or weights of another layout (names
            or shapes: `surge.runtime.checkpoint_fit.state_differences`).
    """
    state = {k: v.detach().clone() for k, v in initial.items()}
    if source == "random":
        return state
    if source == "uniform":
        # the policy head outputs the logits: all zero -> uniform over the (legal) actions
        if "policy_head.weight" not in state:
            raise ValueError("the model has no policy_head to make uniform")
        state["policy_head.weight"].zero_()
        state["policy_head.bias"].zero_()
        return state
    ckpt = torch.load(source, map_location="cpu", weights_only=True)
    weights = ckpt.get("model") if isinstance(ckpt, dict) else None
    if weights is None:
        raise ValueError(f"{source} holds no 'model' weights (not a surge checkpoint)")
    differ = state_differences(state, weights)
    if differ:
        raise ValueError(f"{source} holds weights of another model: {'; '.join(differ)}")
    return {k: v.to(state[k].dtype) for k, v in weights.items()}


def frozen_file(folder: Path, policy_id: int) -> Path:
    """Where the weights a `random` or `uniform` frozen policy started with are kept, so that a
    resumed run plays against the same policy (they are drawn, unseeded without `--seed`)."""
    return folder / f"frozen_p{policy_id}.pth"


def apply_frozen_sources(
    cfg: Config, placement: Any, folder: Path | None = None, resume: bool = False
) -> None:
    """Sets each `--frozen_policies` policy's weights from its source through the placement's
    `set_policy_weights` (at the start of a run, fresh or resumed: frozen policies have no
    checkpoints) and logs what each one plays with. Self-play slots are left to the pool.

    A `random` or `uniform` policy's weights are drawn at a fresh start and written to
    `frozen_file(folder, p)` (atomically); with `resume` they are read back from it, when it exists.
    A checkpoint source is read again from its file. `folder` None: nothing written or read.

    Raises:
        ValueError: see `source_weights`.
    """
    import logging

    log = logging.getLogger("surge")
    for p, source in frozen_sources(cfg).items():
        if source == "self_play":
            continue
        initial, _ = placement.policy_weights(p)
        version = 0
        kept = None if folder is None or source not in BUILT_IN_SOURCES else frozen_file(folder, p)
        if kept is not None and resume and kept.exists():
            weights = torch.load(kept, map_location="cpu", weights_only=True)["model"]
            placement.set_policy_weights(p, source_weights_like(weights, initial, kept), version)
            log.info(
                "Policy %d is frozen (acts, never learns): the %s weights it started with, from %s.",
                p,
                source,
                kept,
            )
            continue
        if source not in BUILT_IN_SOURCES:
            ckpt = torch.load(source, map_location="cpu", weights_only=True)
            version = int(ckpt.get("policy_version", ckpt.get("learner", {}).get("policy_version", 0)))
        weights = source_weights(source, initial)
        if kept is not None:
            tmp = kept.with_name(kept.name + ".tmp")
            torch.save({"model": weights, "source": source}, tmp)
            os.replace(tmp, kept)
        placement.set_policy_weights(p, weights, version)
        log.info("Policy %d is frozen (acts, never learns): weights from %s.", p, source)


def source_weights_like(
    weights: dict[str, torch.Tensor], initial: dict[str, torch.Tensor], path: Path
) -> dict[str, torch.Tensor]:
    """`weights` (read from `path`) checked against the layout of `initial`.

    Raises:
        ValueError: names or shapes differ (the model flags changed since they were written).
    """
    differ = state_differences(initial, weights)
    if differ:
        raise ValueError(f"{path} holds weights of another model: {'; '.join(differ)}")
    return {k: v.to(initial[k].dtype) for k, v in weights.items()}
