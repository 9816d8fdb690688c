"""Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications",
arXiv:1812.05905): the tanh-squashed Gaussian policy, the twin-Q soft target, the actor loss and
the learned temperature.

Actions are in [-1, 1]^D (the squashed space; `ContinuousActor.to_env` rescales them to the Box
bounds, which shifts log-probs by a constant the algorithm does not need). Log-probs `[B]` float32
are of the squashed actions, summed over the D action dimensions.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)


def tanh_log_det_jacobian(u: Tensor) -> Tensor:
    """`log(1 − tanh(u)²) = 2(log 2 − u − softplus(−2u))`, the numerically stable form (exact for
    any u, where `log(1 − tanh(u)² + 1e-6)` saturates). `[..., D]` -> `[..., D]`."""
    return 2.0 * (_LOG_2 - u - F.softplus(-2.0 * u))


def squashed_gaussian_log_prob(u: Tensor, mean: Tensor, log_std: Tensor) -> Tensor:
    """`log π(a|s) = Σ_d [log N(u_d; μ_d, σ_d) − log(1 − tanh²(u_d))]` for `a = tanh(u)`
    (Haarnoja et al. 2018, appendix C "Enforcing Action Bounds"). u, mean, log_std `[B, D]` -> `[B]` float32."""
    normal = -0.5 * ((u - mean) / log_std.exp()) ** 2 - log_std - 0.5 * _LOG_2PI
    return (normal - tanh_log_det_jacobian(u)).sum(dim=-1)


class SquashedSample(NamedTuple):
    """`actions` `[B, D]` in (-1, 1), `log_probs` `[B]`, `pre_tanh` `[B, D]` (the Gaussian draw u)."""

    actions: Tensor
    log_probs: Tensor
    pre_tanh: Tensor


def squashed_gaussian_sample(
    mean: Tensor,
    log_std: Tensor,
    deterministic: bool = False,
    noise: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> SquashedSample:
    """`a = tanh(μ + σ·ξ)`, ξ ~ N(0, I), reparameterised so gradients reach μ and σ (Haarnoja et
    al. 2018, eq. 8's `f_φ(ε; s)`), with its log-prob (`squashed_gaussian_log_prob`).

    Args:
        mean, log_std: `[B, D]` float32.
        deterministic: use u = μ (the evaluation action `tanh(μ)`).
        noise: `[B, D]` draws ξ to use, or None to draw them.
    """
    if deterministic:
        u = mean
    else:
        if noise is None:
            noise = torch.randn(mean.shape, device=mean.device, generator=generator)
        u = mean + log_std.exp() * noise
    return SquashedSample(torch.tanh(u), squashed_gaussian_log_prob(u, mean, log_std), u)


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
