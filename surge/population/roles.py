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

The placements ask `learning_policies(cfg)` which learners to build; the routing of experience asks
it which policies' steps go to a learner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from surge.cfg.config import Config
from surge.errors import ConfigError

#: the weight sources of `--frozen_policies` other than a checkpoint file
BUILT_IN_SOURCES = ("random", "uniform")


def parse_frozen_policies(items: list[str], num_policies: int) -> dict[int, str]:
    """`--frozen_policies` as {policy id: source}.

    Args:
        items: the flag's `ID:SOURCE` strings.
        num_policies: `--num_policies`.
    Raises:
        ConfigError: an item is not `ID:SOURCE`, an id is out of [0, num_policies) or repeated, a
            checkpoint file does not exist, or every policy would be frozen.
    """
    out: dict[int, str] = {}
    for item in items:
        head, sep, source = str(item).partition(":")
        if not sep or not head.strip().isdigit() or not source:
            raise ConfigError(
                "frozen_policies",
                f"{item!r} is not ID:SOURCE.",
                "write e.g. --frozen_policies 1:uniform 2:path/to/checkpoint.pth.",
            )
        p = int(head)
        if not 0 <= p < num_policies:
            raise ConfigError(
                "frozen_policies",
                f"policy {p} does not exist with --num_policies={num_policies}.",
                f"use ids between 0 and {num_policies - 1}, or raise --num_policies.",
            )
        if p in out:
            raise ConfigError("frozen_policies", f"policy {p} is listed twice.", "list each policy once.")
        if source not in BUILT_IN_SOURCES and not Path(source).is_file():
            raise ConfigError(
                "frozen_policies",
                f"policy {p}'s source {source!r} is neither {' nor '.join(BUILT_IN_SOURCES)} nor a file.",
                "give the path of a checkpoint (.pth) written by surge.",
            )
        out[p] = source
    if out and len(out) >= num_policies:
        raise ConfigError(
            "frozen_policies", "every policy is frozen: nothing would learn.", "leave one policy learning."
        )
    return out


def frozen_sources(cfg: Config) -> dict[int, str]:
    """{policy id: weight source} of the frozen policies; source `self_play` for the opponent slots
    of `--self_play=True` (their weights come from the pool)."""
    if getattr(cfg, "self_play", False):
        return {p: "self_play" for p in range(1, cfg.num_policies)}
    return parse_frozen_policies(list(getattr(cfg, "frozen_policies", []) or []), cfg.num_policies)


def learning_policies(cfg: Config) -> list[int]:
    """The ids of the policies that learn, ascending (all of them unless some are frozen)."""
    frozen = frozen_sources(cfg)
    return [p for p in range(cfg.num_policies) if p not in frozen]


def is_learning(cfg: Config, policy_id: int) -> bool:
    return policy_id in learning_policies(cfg)


def source_weights(source: str, initial: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The model state a frozen policy starts with for `--frozen_policies` SOURCE.

    Args:
        source: `random`, `uniform` or a checkpoint path.
        initial: the policy's current (random initial) model state; not modified.
    Returns:
        a state dict of `initial`'s layout.
    Raises:
        ValueError: the checkpoint holds no `model` weights, or weights of another layout (names
            or shapes: `surge.experiment.checkpoint_fit.state_differences`).
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
    from surge.experiment.checkpoint_fit import state_differences

    ckpt = torch.load(source, map_location="cpu", weights_only=True)
    weights = ckpt.get("model") if isinstance(ckpt, dict) else None
    if weights is None:
        raise ValueError(f"{source} holds no 'model' weights (not a surge checkpoint)")
    differ = state_differences(state, weights)
    if differ:
        raise ValueError(f"{source} holds weights of another model: {'; '.join(differ)}")
    return {k: v.to(state[k].dtype) for k, v in weights.items()}


def apply_frozen_sources(cfg: Config, placement: Any) -> None:
    """Sets each `--frozen_policies` policy's weights from its source through the placement's
    `set_policy_weights` (at the start of a run, fresh or resumed: frozen policies have no
    checkpoints) and logs what each one plays with. Self-play slots are left to the pool.

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
        if source not in BUILT_IN_SOURCES:
            ckpt = torch.load(source, map_location="cpu", weights_only=True)
            version = int(ckpt.get("policy_version", ckpt.get("learner", {}).get("policy_version", 0)))
        placement.set_policy_weights(p, source_weights(source, initial), version)
        log.info("Policy %d is frozen (acts, never learns): weights from %s.", p, source)
