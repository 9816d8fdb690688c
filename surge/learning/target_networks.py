"""Target-network updates: Polyak averaging (soft, Lillicrap et al. 2016, Algorithm 1's last line)
and hard copies (DQN, Mnih et al. 2015, Algorithm 1: "every C steps reset Q̂ = Q")."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor, nn


def _pairs(target: nn.Module | Iterable[Tensor], source: nn.Module | Iterable[Tensor]) -> tuple[list, list]:
    t = list(target.parameters()) if isinstance(target, nn.Module) else list(target)
    s = list(source.parameters()) if isinstance(source, nn.Module) else list(source)
    if len(t) != len(s) or any(a.shape != b.shape for a, b in zip(t, s, strict=True)):
        raise ValueError("target and source must have the same parameters (count and shapes)")
    return t, s


def _copy_buffers(target: nn.Module | Iterable[Tensor], source: nn.Module | Iterable[Tensor]) -> None:
    if isinstance(target, nn.Module) and isinstance(source, nn.Module):
        for tb, sb in zip(target.buffers(), source.buffers(), strict=True):
            tb.copy_(sb)


@torch.no_grad()
def polyak_update(
    target: nn.Module | Iterable[Tensor], source: nn.Module | Iterable[Tensor], tau: float
) -> None:
    """`θ' ← τ·θ + (1 − τ)·θ'` in place, without gradient, with one fused `foreach` kernel
    (Lillicrap et al. 2016, Algorithm 1: `θ^Q' ← τθ^Q + (1 − τ)θ^Q'`). τ = 1 copies, τ = 0 keeps.

    For modules, buffers (running statistics, observation normalisers) are copied, not averaged,
    as Stable-Baselines3 does for batch-norm statistics.

    Args:
        target, source: modules of the same architecture, or matching sequences of tensors.
        tau: the soft-update coefficient in [0, 1].
    Raises:
        ValueError: τ outside [0, 1] or mismatched parameters.
    """
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must lie in [0, 1], got {tau}")
    t, s = _pairs(target, source)
    if t:
        torch._foreach_lerp_(t, s, tau)
    _copy_buffers(target, source)


@torch.no_grad()
def hard_update(target: nn.Module | Iterable[Tensor], source: nn.Module | Iterable[Tensor]) -> None:
    """`θ' ← θ` (parameters and, for modules, buffers), in place.

    Raises:
        ValueError: mismatched parameters.
    """
    t, s = _pairs(target, source)
    if t:
        torch._foreach_copy_(t, s)
    _copy_buffers(target, source)
