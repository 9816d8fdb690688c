"""DDPG (Lillicrap et al. 2016) and TD3 (Fujimoto, van Hoof & Meger 2018) targets and losses.

Actions are in the actor's normalised space [-1, 1]^D (`ContinuousActor.to_env` rescales them to
the Box bounds), as Stable-Baselines3 stores them; noise scales are in that space (TD3's σ = 0.2,
c = 0.5 are relative to a max action of 1). `returns`, `discounts` `[B]` as in
`surge.learning.q_learning` (discounts 0 after a termination, γ^n otherwise).
"""

from __future__ import annotations

import torch
from torch import Tensor


def td3_smoothed_actions(
    next_actions: Tensor,
    noise_std: float,
    noise_clip: float,
    noise: Tensor | None = None,
    low: float = -1.0,
    high: float = 1.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Target policy smoothing (Fujimoto et al. 2018, eqs. 14-15 and Algorithm 1):
    `ã = clip(π_φ'(s') + clip(ε, −c, c), low, high)`, `ε ~ N(0, σ²)`.

    Args:
        next_actions: `[B, D]` float32 target-actor actions π_φ'(s').
        noise_std: σ; noise_clip: c (both in action units).
        noise: `[B, D]` standard-normal draws to use (scaled by σ here), or None to draw them.
        low, high: the action bounds.
    Returns:
        `[B, D]` float32 actions, without gradient.
    Raises:
        ValueError: negative σ or c.
    """
    if noise_std < 0 or noise_clip < 0:
        raise ValueError(f"noise_std and noise_clip must be >= 0, got {noise_std}, {noise_clip}")
    next_actions = next_actions.detach()
    if noise is None:
        noise = torch.randn(next_actions.shape, device=next_actions.device, generator=generator)
    eps = (noise * noise_std).clamp(-noise_clip, noise_clip)
    return (next_actions + eps).clamp(low, high)


def clipped_double_q_target(returns: Tensor, discounts: Tensor, next_q1: Tensor, next_q2: Tensor) -> Tensor:
    """`y = R + d·min(Q_θ'1(s', ã), Q_θ'2(s', ã))` (Fujimoto et al. 2018, eq. 10 and Algorithm 1).

    Args: `[B]` float32 each. Returns: `[B]` float32 targets, without gradient.
    """
    return returns + discounts * torch.minimum(next_q1, next_q2).detach()


def ddpg_critic_target(returns: Tensor, discounts: Tensor, next_q: Tensor) -> Tensor:
    """`y = R + d·Q'(s', μ'(s'))` (Lillicrap et al. 2016, Algorithm 1: `y_i = r_i + γQ'(s_{i+1},
    μ'(s_{i+1}|θ^μ')|θ^Q')`). Args: `[B]` float32. Returns: `[B]` float32, without gradient."""
    return returns + discounts * next_q.detach()


def critic_loss(q_preds: list[Tensor], targets: Tensor, weights: Tensor | None = None) -> Tensor:
    """`Σ_k mean_i w_i (Q_k(s_i, a_i) − y_i)²` over the critics (Lillicrap et al. 2016, Algorithm
    1's `L`; TD3 sums its two critics' losses, as Stable-Baselines3 does).

    Args:
        q_preds: list of `[B]` float32 critic outputs, with gradient.
        targets: `[B]` float32 constants; weights: `[B]` importance weights or None.
    """
    targets = targets.detach()
    total = torch.zeros((), device=targets.device)
    for q in q_preds:
        per = (q - targets) ** 2
        total = total + ((per * weights).mean() if weights is not None else per.mean())
    return total


def deterministic_actor_loss(q_of_actor: Tensor) -> Tensor:
    """`−mean_i Q(s_i, μ(s_i))`: the deterministic policy gradient (Silver et al. 2014, eq. 6;
    Lillicrap et al. 2016, Algorithm 1's actor update). TD3 uses its first critic only
    (Fujimoto et al. 2018, Algorithm 1). `q_of_actor` `[B]` float32, with gradient to the actor."""
    return -q_of_actor.mean()
