"""ε-greedy exploration for Q-learning: a linear ε schedule (Mnih et al. 2015), per-actor ε (Ape-X,
Horgan et al. 2018; R2D2, Kapturowski et al. 2019) and vectorised ε-greedy action selection."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def linear_schedule(start: float, end: float, steps: int) -> Callable[[float], float]:
    """`f(t) = start + (end − start)·min(t / steps, 1)`: linear from `start` at t = 0 to `end` at
    t = `steps`, then constant (DQN's ε annealed over its first 1M frames, Mnih et al. 2015,
    Extended Data Table 1). `t` is in the caller's unit (env steps or env frames, say which).

    Raises:
        ValueError: negative `steps`.
    """
    if steps < 0:
        raise ValueError(f"linear_schedule steps must be >= 0, got {steps}")

    def value(t: float) -> float:
        if steps == 0 or t >= steps:
            return float(end)
        return float(start + (end - start) * max(t, 0.0) / steps)

    return value


def per_actor_epsilon(
    actor_ids: Tensor | int, num_actors: int, eps: float = 0.4, alpha: float = 7.0
) -> Tensor | float:
    """`ε_i = ε^(1 + α·i/(N − 1))` (Horgan et al. 2018, Ape-X, section 4; R2D2 uses the same with
    ε = 0.4, α = 7). Actor 0 explores most (ε), actor N − 1 least (ε^(1+α)); one actor gets ε.

    Args:
        actor_ids: an int i or an int tensor `[B]` of ids in [0, N).
        num_actors: N ≥ 1.
    Returns:
        a float for an int, else `[B]` float32.
    Raises:
        ValueError: N < 1, or ε outside [0, 1].
    """
    if num_actors < 1:
        raise ValueError(f"num_actors must be >= 1, got {num_actors}")
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"eps must lie in [0, 1], got {eps}")
    denom = max(num_actors - 1, 1)
    if isinstance(actor_ids, int):
        return float(eps ** (1.0 + alpha * actor_ids / denom))
    return eps ** (1.0 + alpha * actor_ids.to(torch.float32) / denom)


def epsilon_greedy(
    q_values: Tensor,
    epsilon: float | Tensor,
    action_mask: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """ε-greedy actions: with probability ε a uniformly random legal action, else `argmax_a Q`.

    Args:
        q_values: `[B, A]` float Q-values (or expected values of a distributional head).
        epsilon: a float or `[B]` float per row (per-actor ε).
        action_mask: `[B, A]` bool or 0/1 (1 = legal; each row has one legal action at least), or None.
        generator: the random generator, or None for torch's global one.
    Returns:
        `[B]` int64 actions.
    """
    B, A = q_values.shape
    dev = q_values.device
    scores = torch.rand(B, A, device=dev, generator=generator)
    greedy_q = q_values
    if action_mask is not None:
        legal = action_mask.bool()
        scores = scores.masked_fill(~legal, -1.0)  # the argmax of uniform scores over legal actions
        greedy_q = q_values.masked_fill(~legal, float("-inf"))
    random_a = scores.argmax(dim=1)
    greedy_a = greedy_q.argmax(dim=1)
    explore = torch.rand(B, device=dev, generator=generator) < epsilon
    return torch.where(explore, random_a, greedy_a)
