"""rl_games' penalties on the mean of a Gaussian policy (`--bounds_loss_coef`, `--bound_loss_type`):
rl_games 1.6.5, algos_torch/a2c_continuous.py, `A2CAgent.bound_loss` and `A2CAgent.reg_loss`.
Pure functions of tensors; the APPO learner averages them over valid samples and multiplies by
`bounds_loss_coef` (rl_games: `loss = ... + b_loss * bounds_loss_coef`, the mean over samples taken
by its `apply_masks`)."""

from __future__ import annotations

from torch import Tensor

#: rl_games' soft bound on the action mean (`bound_loss`: `soft_bound = 1.1`)
SOFT_BOUND = 1.1


def action_bounds_loss(mu: Tensor, kind: str = "bound") -> Tensor:
    """Per-sample penalty on the action means.

    bound: `sum_i max(mu_i - 1.1, 0)^2 + min(mu_i + 1.1, 0)^2` (zero inside [-1.1, 1.1]);
    regularisation: `sum_i mu_i^2`.

    Args:
        mu: `[N, action_dim]` float32, the Gaussian policy's means.
        kind: "bound" or "regularisation".
    Returns:
        `[N]` float32.

    Raises:
        ValueError: an unknown `kind`.
    """
    if kind == "bound":
        high = (mu - SOFT_BOUND).clamp(min=0.0).pow(2)
        low = (mu + SOFT_BOUND).clamp(max=0.0).pow(2)
        return (high + low).sum(dim=-1)
    if kind == "regularisation":
        return mu.pow(2).sum(dim=-1)
    raise ValueError(f"unknown bound_loss_type {kind!r} (bound or regularisation)")
