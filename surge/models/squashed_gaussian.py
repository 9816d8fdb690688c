"""The tanh-squashed Gaussian (Haarnoja et al. 2018, appendix C "Enforcing Action Bounds"): the
continuous actors' distribution (`surge.models.continuous_networks`), sampled and scored by SAC.

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
