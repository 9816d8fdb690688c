"""Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications",
arXiv:1812.05905): the twin-Q soft target, the actor loss and the learned temperature (the
tanh-squashed Gaussian policy is `surge.models.squashed_gaussian`).

Actions are in [-1, 1]^D (the squashed space; `ContinuousActor.to_env` rescales them to the Box
bounds, which shifts log-probs by a constant the algorithm does not need). Log-probs `[B]` float32
are of the squashed actions, summed over the D action dimensions.
"""

from __future__ import annotations

import torch
from torch import Tensor


def sac_soft_target(
    returns: Tensor,
    discounts: Tensor,
    next_q1: Tensor,
    next_q2: Tensor,
    next_log_probs: Tensor,
    alpha: float | Tensor,
) -> Tensor:
    """`y = R + d·(min_k Q_θ'k(s', a') − α log π(a'|s'))`, `a' ~ π(·|s')` (Haarnoja et al. 2018,
    eqs. 3 and 5 with the clipped double-Q of section 6, as their Algorithm 1 uses two Q-functions).

    Args: returns, discounts, next_q1, next_q2, next_log_probs `[B]` float32; alpha the temperature.
    Returns: `[B]` float32 targets, without gradient.
    """
    soft_v = torch.minimum(next_q1, next_q2) - alpha * next_log_probs
    return (returns + discounts * soft_v).detach()


def sac_actor_loss(log_probs: Tensor, q1_pi: Tensor, q2_pi: Tensor, alpha: float | Tensor) -> Tensor:
    """`J_π = mean_i [α log π(ã_i|s_i) − min_k Q_k(s_i, ã_i)]` (Haarnoja et al. 2018, eq. 7 with
    the reparameterised ã of eq. 8). log_probs, q1_pi, q2_pi `[B]` with gradient to the actor;
    pass α detached."""
    return (alpha * log_probs - torch.minimum(q1_pi, q2_pi)).mean()


def sac_temperature_loss(log_alpha: Tensor, log_probs: Tensor, target_entropy: float) -> Tensor:
    """`J(α) = mean_i [−log α·(log π(a_i|s_i) + H̄)]` (Haarnoja et al. 2018, eq. 18, with log α
    optimised in place of α, as their code and Stable-Baselines3 do). Its gradient with respect to
    log α is `H(π) − H̄` estimated by `−mean log π − H̄`: descent raises α when the entropy is
    under the target, lowers it when above.

    Args:
        log_alpha: scalar parameter, with gradient.
        log_probs: `[B]` float32 log-probs of fresh policy samples (detached here).
        target_entropy: H̄, `default_target_entropy(D)` = −D by default.
    """
    return -(log_alpha * (log_probs.detach() + target_entropy)).mean()


def default_target_entropy(action_dim: int) -> float:
    """`H̄ = −dim(A)` (Haarnoja et al. 2018, section 7 / appendix D: "−dim(A) … target entropy")."""
    return -float(action_dim)
