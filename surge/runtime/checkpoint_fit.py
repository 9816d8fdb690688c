"""Whether a checkpoint's weights fit the network this run builds, said in words before loading.

`nn.Module.load_state_dict` refuses weights of another network with a `RuntimeError` that lists
parameter names; in the async placement that error surfaced inside a learner process after every
worker had started. A checkpoint stops fitting when it was written by an older surge whose network
differed (e.g. `--dueling` before its streams got their own hidden layers) or when a model flag
changed on resume. `check_fits` names the checkpoint, what differs and the ways out, and the
placements call it before loading (the async placement in the main process, before any process
starts).
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor, nn

from surge.errors import SurgeError

_SHOWN = 4  # names listed per kind of difference


class CheckpointMismatch(SurgeError):
    """A checkpoint's weights do not fit the network the configuration builds."""


def state_differences(module: nn.Module | Mapping[str, Tensor], state: Mapping[str, Tensor]) -> list[str]:
    """What keeps `state` from loading into `module` (or into a module whose state dict is
    `module`) with `strict=True`, one line per kind: missing names, unexpected names, and shapes
    that differ (empty when it fits)."""
    own = module.state_dict() if isinstance(module, nn.Module) else module
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [
        f"{k} {tuple(state[k].shape)} saved, {tuple(v.shape)} built"
        for k, v in own.items()
        if k in state and hasattr(state[k], "shape") and tuple(state[k].shape) != tuple(v.shape)
    ]

    def listed(names: list[str]) -> str:
        more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
        return ", ".join(names[:_SHOWN]) + more

    out = []
    if missing:
        out.append(f"missing from the checkpoint: {listed(missing)}")
    if unexpected:
        out.append(f"in the checkpoint but not in this network: {listed(unexpected)}")
    if shapes:
        out.append(f"other shapes: {listed(shapes)}")
    return out


def check_fits(module: nn.Module, state: Mapping[str, Tensor], what: str) -> None:
    """Raises `CheckpointMismatch` when `state` would not load into `module` (strictly).

    Args:
        module: the network this run built (an acting module or a learner module).
        state: its saved `state_dict`.
        what: the checkpoint and part, for the message, e.g. "policy 0's checkpoint (model)".
    Raises:
        CheckpointMismatch: naming `what`, the differences (`state_differences`) and the fixes.
    """
    diffs = state_differences(module, state)
    if not diffs:
        return
    raise CheckpointMismatch(
        f"{what} holds the weights of another network than this configuration builds "
        f"({type(module).__name__}): " + "; ".join(diffs) + ". It was written by an older surge "
        "or with other model flags (its flags and git_hash are in the experiment's cfg.json). "
        "Resume with the flags and surge version it was trained with, or train anew (another "
        "--experiment, or --restart_behavior=overwrite)."
    )
