"""Categorical (C51) distributional Q-learning (Bellemare, Dabney & Munos 2017): a fixed support of
`atoms` returns `z_i = v_min + i·Δz`, `Δz = (v_max − v_min)/(atoms − 1)`, a probability per atom and
action, the projected Bellman target (Algorithm 1) and its cross-entropy loss.

Shapes: probabilities `[B, atoms]` or `[B, A, atoms]` float32; `returns`, `discounts` `[B]` as in
`surge.learning.q_learning` (discounts 0 after a termination, γ^n otherwise).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor


def categorical_support(v_min: float, v_max: float, atoms: int, device: torch.device | str = "cpu") -> Tensor:
    """`[atoms]` float32 `z_i = v_min + i·(v_max − v_min)/(atoms − 1)`.

    Raises:
        ValueError: `v_min >= v_max`, a non-finite bound, or fewer than 2 atoms.
    """
    if not (math.isfinite(v_min) and math.isfinite(v_max) and v_min < v_max):
        raise ValueError(f"the support needs finite v_min < v_max, got [{v_min}, {v_max}]")
    if atoms < 2:
        raise ValueError(f"the support needs at least 2 atoms, got {atoms}")
    return torch.linspace(v_min, v_max, atoms, device=device)


def categorical_q_values(probs: Tensor, support: Tensor) -> Tensor:
    """`Q(s, a) = Σ_i z_i p_i(s, a)` (Bellemare et al. 2017, eq. 1's expectation): probs
    `[..., A, atoms]`, support `[atoms]` -> `[..., A]`."""
    return probs @ support


def select_next_probs(next_probs_target: Tensor, next_q_select: Tensor) -> Tensor:
    """The target distribution of the greedy next action: `p_target(s', argmax_a Q(s', a))`.

    `next_q_select [B, A]` are the target network's own expected Q-values (Bellemare et al. 2017,
    Algorithm 1) or the online network's (double DQN, van Hasselt et al. 2016, as Rainbow does);
    next_probs_target `[B, A, atoms]` -> `[B, atoms]`. Mask illegal actions' Q-values with -inf first.
    """
    a = next_q_select.argmax(dim=1)
    return next_probs_target[torch.arange(a.shape[0], device=a.device), a]


def categorical_projection(
    next_probs: Tensor, returns: Tensor, discounts: Tensor, v_min: float, v_max: float
) -> Tensor:
    """Projects the distribution of `R + d·Z(s', a*)` onto the support (Bellemare et al. 2017,
    Algorithm 1).

    Each atom's target `T̂z_j = clamp(R + d·z_j, v_min, v_max)` sits at fractional index
    `b_j = (T̂z_j − v_min)/Δz`; its mass `p_j` is split between `l = ⌊b_j⌋` (weight `u − b_j`) and
    `u = l + 1` (weight `b_j − l`). Where `b_j` is an integer the whole mass goes to `l` (the
    algorithm as written would lose it there, since `⌈b⌉ = ⌊b⌋`).

    Args:
        next_probs: `[B, atoms]` float32 `p_j(s', a*)` (each row sums to 1), no gradient needed.
        returns, discounts: `[B]` float32.
        v_min, v_max: the support's bounds.
    Returns:
        `[B, atoms]` float32 target probabilities `m`, rows summing to 1, without gradient.
    """
    next_probs = next_probs.detach()
    atoms = next_probs.shape[1]
    support = categorical_support(v_min, v_max, atoms, next_probs.device).to(next_probs.dtype)
    delta_z = (v_max - v_min) / (atoms - 1)
    tz = (returns.unsqueeze(1) + discounts.unsqueeze(1) * support).clamp(v_min, v_max)
    b = ((tz - v_min) / delta_z).clamp(0, atoms - 1)
    lower = b.floor()
    upper_w = b - lower  # 0 where b lands on an atom
    lower_i = lower.long()
    upper_i = (lower_i + 1).clamp(max=atoms - 1)  # b = atoms − 1 has upper_w 0
    m = torch.zeros_like(next_probs)
    m.scatter_add_(1, lower_i, next_probs * (1.0 - upper_w))
    m.scatter_add_(1, upper_i, next_probs * upper_w)
    return m


class CategoricalLoss(NamedTuple):
    """`loss` scalar (importance-weighted mean cross-entropy); per-sample `cross_entropy` `[B]` and
    `kl` `[B]` = KL(m ‖ p) without gradient (Rainbow's priorities, Hessel et al. 2018, section 3)."""

    loss: Tensor
    cross_entropy: Tensor
    kl: Tensor


def categorical_loss(
    log_probs_taken: Tensor, target_probs: Tensor, weights: Tensor | None = None
) -> CategoricalLoss:
    """The C51 loss `−Σ_i m_i log p_i(s, a)` (Bellemare et al. 2017, Algorithm 1's output).

    Args:
        log_probs_taken: `[B, atoms]` float32 log p(s, a) of the stored actions (a log-softmax of
            logits: stable where a probability underflows), with gradient.
        target_probs: `[B, atoms]` float32 `m` from `categorical_projection`, constants.
        weights: `[B]` importance-sampling weights, or None.
    """
    m = target_probs.detach()
    ce = -(m * log_probs_taken).sum(dim=1)
    loss = (ce * weights).mean() if weights is not None else ce.mean()
    ce_d = ce.detach()
    entropy = -(m * torch.log(m.clamp(min=1e-12))).sum(dim=1)
    return CategoricalLoss(loss, ce_d, (ce_d - entropy).clamp(min=0.0))
