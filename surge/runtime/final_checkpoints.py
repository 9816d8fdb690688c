"""The end of a training run: whether every learning policy's final checkpoint was written, and
why not when one was not (`surge.app.training_run`)."""

from __future__ import annotations

import logging
from pathlib import Path

from surge.runtime.checkpoint import CheckpointManager
from surge.runtime.placement import Placement

log = logging.getLogger("surge")


def final_checkpoints_written(
    placement: Placement, learning: list[int], ckpts: list[CheckpointManager], root: Path
) -> bool:
    """True when the final checkpoint of every policy in `learning` was written (`placement`'s
    `final_written`); else logs, per policy, why not and where its weights were first found
    non-finite (the first refused save names the tensors that were non-finite then; `ckpts` give
    the latest checkpoint, named relative to the experiment folder `root`), and that the run is
    not marked done."""
    p = placement
    missing = [i for i in learning if i not in p.final_written]
    for i in missing:
        refusals = [r for r in p.save_refusals if r.policy_id == i]
        final = next((r for r in refusals if r.kind == "final"), None)
        if final is None:
            why = "its learner stopped without writing it (see the errors above)"
        else:
            why = final.reason
            first = refusals[0]
            if first is not final:  # an earlier save saw the weights non-finite first
                why += (
                    f"; they went non-finite by env frame {first.env_frames}, where the "
                    f"{first.kind} save was refused: {first.reason}"
                )
        latest = ckpts[i].latest()
        log.error(
            "Policy %d: the final checkpoint was not written: %s. %s",
            i,
            why,
            f"The latest checkpoint is {latest.relative_to(root)}."
            if latest is not None
            else "It has no checkpoint.",
        )
    if missing:
        log.error(
            "Training failed: the final weights of %s could not be saved, so the run is not "
            "marked done. Lower --learning_rate or --max_grad_norm, check --reward_scale and the "
            "env's rewards, and restart with --restart_behavior=restart (or resume from the "
            "latest checkpoint).",
            ", ".join(f"policy {i}" for i in missing),
        )
    return not missing
