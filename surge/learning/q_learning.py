"""Q-learning targets and losses for DQN and its family (double, n-step, prioritized, R2D2's
value rescaling): pure functions on `[B]`-shaped float32 tensors.

Conventions:
- `returns [B]`: the n-step discounted reward sum `Σ_{k<n} γ^k r_{t+k}` (see `nstep_returns`).
- `discounts [B]`: the factor that multiplies the bootstrap value, `γ^n` where the window did not
  end in a termination and 0 where it did. A truncated (time-limit) step is not a termination: its
  window bootstraps from the observation it ended on.
- Q-values `[B, A]` float32; actions `[B]` int64; action masks `[B, A]` bool or 0/1 (1 = legal).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor


def nstep_returns(
    rewards: Tensor, terminated: Tensor, truncated: Tensor, gamma: float
) -> tuple[Tensor, Tensor, Tensor]:
    """n-step returns of windows of n consecutive steps (Sutton & Barto 2018, eq. 7.1; the
    n-step DQN target of Hessel et al. 2018, eq. 2).

    A window stops at its first terminated or truncated step k (inclusive): the return sums
    `γ^j r_j` for j ≤ k; a termination makes the discount 0, a truncation (or a window that runs
    its n steps) leaves it `γ^(k+1)`, bootstrapping from the observation after step k.

    Args:
        rewards: `[B, n]` float32, `rewards[:, j]` the reward of the window's j-th step.
        terminated, truncated: `[B, n]` bool or 0/1.
        gamma: discount γ in [0, 1].
    Returns:
        returns `[B]` float32, discounts `[B]` float32, and `steps [B]` int64: how many steps the
        window used (k + 1), i.e. the bootstrap observation is the one `steps` steps after the first.
    Raises:
        ValueError: gamma outside [0, 1].
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    B, n = rewards.shape
    ended = terminated.bool() | truncated.bool()
    # alive[:, j]: no step before j ended the window
    before = torch.cumsum(ended.to(torch.int64), dim=1) - ended.to(torch.int64)
    alive = before == 0
    powers = gamma ** torch.arange(n, dtype=rewards.dtype, device=rewards.device)
    returns = (rewards * powers * alive).sum(dim=1)
    steps = alive.sum(dim=1)  # the first ending step is the last alive one
    last = (steps - 1).clamp(min=0).unsqueeze(1)
    term_at_end = terminated.bool().gather(1, last).squeeze(1)
    discounts = torch.where(term_at_end, torch.zeros_like(returns), gamma ** steps.to(rewards.dtype))
    return returns, discounts, steps


def _mask_q(q: Tensor, action_mask: Tensor | None) -> Tensor:
    if action_mask is None:
        return q
    return q.masked_fill(~action_mask.bool(), float("-inf"))


def q_max_target(
    next_q_target: Tensor, returns: Tensor, discounts: Tensor, next_action_mask: Tensor | None = None
) -> Tensor:
    """The DQN target `y = R + d·max_a Q_target(s', a)` (Mnih et al. 2015, eq. 2 and Algorithm 1;
    n-step as Hessel et al. 2018, eq. 2).

    Args:
        next_q_target: `[B, A]` target-network Q-values of the bootstrap observation.
        returns, discounts: `[B]` float32 (module docstring).
        next_action_mask: `[B, A]` legal actions at the bootstrap observation, or None.
    Returns:
        `[B]` float32 targets, without gradient.
    """
    q = _mask_q(next_q_target.detach(), next_action_mask).max(dim=1).values
    q = torch.where(discounts == 0, torch.zeros_like(q), q)  # no -inf·0 where nothing is legal
    return returns + discounts * q


def double_q_target(
    next_q_online: Tensor,
    next_q_target: Tensor,
    returns: Tensor,
    discounts: Tensor,
    next_action_mask: Tensor | None = None,
) -> Tensor:
    """The double-DQN target `y = R + d·Q_target(s', argmax_a Q_online(s', a))` (van Hasselt et
    al. 2016, eq. 4): the online network selects, the target network evaluates.

    Args:
        next_q_online, next_q_target: `[B, A]` Q-values of the bootstrap observation.
        returns, discounts: `[B]` float32.
        next_action_mask: `[B, A]` legal actions at the bootstrap observation, or None.
    Returns:
        `[B]` float32 targets, without gradient.
    """
    a = _mask_q(next_q_online.detach(), next_action_mask).argmax(dim=1, keepdim=True)
    q = next_q_target.detach().gather(1, a).squeeze(1)
    return returns + discounts * q


class TDLoss(NamedTuple):
    """`loss` scalar (importance-weighted mean); `abs_td_errors` `[B]` |y - Q| without gradient,
    the new priorities of prioritized replay (Schaul et al. 2016, section 3.3)."""

    loss: Tensor
    abs_td_errors: Tensor


def td_loss(
    q_taken: Tensor, targets: Tensor, weights: Tensor | None = None, kind: str = "huber", delta: float = 1.0
) -> TDLoss:
    """The TD loss `mean_i w_i·ℓ(y_i - Q_i)` with ℓ Huber (Mnih et al. 2015, "Methods: training
    algorithm", error clipping to [-1, 1]; δ = `delta`) or `0.5·x²` ("mse").

    Args:
        q_taken: `[B]` float32 Q(s, a) of the stored actions, with gradient.
        targets: `[B]` float32, treated as constants.
        weights: `[B]` importance-sampling weights of prioritized replay (Schaul et al. 2016,
            Algorithm 1 line 10: `w = (N·P(i))^-β / max w`), or None for 1.
        kind: "huber" or "mse".
    Raises:
        ValueError: an unknown `kind`.
    """
    targets = targets.detach()
    if kind == "huber":
        per = F.huber_loss(q_taken, targets, reduction="none", delta=delta)
    elif kind == "mse":
        per = 0.5 * (q_taken - targets) ** 2
    else:
        raise ValueError(f"td_loss kind must be 'huber' or 'mse', got {kind!r}")
    loss = (per * weights).mean() if weights is not None else per.mean()
    return TDLoss(loss, (targets - q_taken.detach()).abs())


def value_rescale(x: Tensor, eps: float = 1e-3) -> Tensor:
    """`h(x) = sign(x)(√(|x|+1) − 1) + εx` (Pohlen et al. 2018, eq. after Prop. A.1; R2D2,
    Kapturowski et al. 2019, section 2). `√(|x|+1) − 1` is computed as `|x| / (√(|x|+1) + 1)`,
    exact near 0. Shape and dtype of `x`."""
    ax = x.abs()
    return torch.sign(x) * (ax / (torch.sqrt(ax + 1.0) + 1.0)) + eps * x


def inverse_value_rescale(z: Tensor, eps: float = 1e-3) -> Tensor:
    """The exact inverse of `value_rescale` (Pohlen et al. 2018, Prop. A.2):
    `h⁻¹(z) = sign(z)·(((√(1 + 4ε(|z| + 1 + ε)) − 1) / (2ε))² − 1)`.

    Evaluated in an algebraically equal form free of cancellation (with s the square root,
    t = (s − 1)/(2ε) = 2(|z|+1+ε)/(1+s), and t² − 1 = (t − 1)(t + 1) with
    t − 1 = 4|z|(|z|+1+ε) / ((1+2ε+2|z|+s)(1+s))): the paper's form loses all precision near 0 in
    float32 and divides by zero at ε = 0, where this one gives `(|z|+1)² − 1`. Shape and dtype of `z`.
    """
    az = z.abs()
    s = torch.sqrt(1.0 + 4.0 * eps * (az + 1.0 + eps))
    t_minus_1 = 4.0 * az * (az + 1.0 + eps) / ((1.0 + 2.0 * eps + 2.0 * az + s) * (1.0 + s))
    t_plus_1 = (2.0 * az + 3.0 + 2.0 * eps + s) / (1.0 + s)
    return torch.sign(z) * t_minus_1 * t_plus_1
