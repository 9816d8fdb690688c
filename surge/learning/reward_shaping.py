"""The rewards a learner trains on: the env's reward shifted, scaled, clipped and (optionally) its
log, as rl_games' `DefaultRewardsShaper` shapes them. The reported returns stay the env's."""

from __future__ import annotations

from torch import Tensor

from surge.errors import EnvError

__all__ = ["shaped_rewards"]


def shaped_rewards(
    rewards: Tensor, shift: float, scale: float, clip: float, clip_low: float | None = None, log: bool = False
) -> Tensor:
    """`clamp((rewards + shift) * scale, low, clip)` with `low = -clip` unless `clip_low` is
    given, then its natural log with `log`: rl_games' `DefaultRewardsShaper`
    (rl_games/common/tr_helpers.py: shift_value, then scale_value, then min_val/max_val, then
    log_val), the shift added only when it is not 0. `rewards` any shape, float32; returns a new
    tensor.

    Raises:
        EnvError: with `log`, where a shaped reward is <= 0 (its log is -inf or NaN, which rl_games
            trains on; surge stops before any is trained on, naming the flags that fix it).
    """
    if shift:
        rewards = rewards + shift
    out = (rewards * scale).clamp(-clip if clip_low is None else clip_low, clip)
    if not log:
        return out
    if not bool((out > 0).all()):
        raise EnvError(
            f"--reward_log: a shaped reward is {float(out.min()):g} <= 0, whose log is not finite; "
            "raise --reward_shift (or --reward_clip_low above 0) so that every shaped reward is positive."
        )
    return out.log_()
