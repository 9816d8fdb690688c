"""Return and advantage estimators: pure functions on time-major `[T, B]` float32 tensors.

Conventions shared by all of them:
- `rewards[t]`, `dones[t]` belong to the transition from step t to t+1; `dones[t] = 1` when the
  episode ended there (terminated or truncated), so nothing is bootstrapped across it.
- `values` has T+1 rows: `values[T]` is the bootstrap value of the observation after the last step.
- Time-outs: before calling these, fold the bootstrap of a truncated step into its reward with
  `bootstrap_truncated_rewards` (the "value bootstrap" of rl_games), and mark it done.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def reverse_scan(x: Tensor, coef: Tensor, init: Tensor) -> Tensor:
    """`y_t = x_t + coef_t · y_{t+1}` for t = T-1 .. 0, with `y_T = init`: the backward
    recurrence of every estimator here.

    Args:
        x, coef: `[T, B]` float tensors on one device.
        init: `[B]` (or broadcastable to it) the value after the last step.
    Returns:
        `[T, B]` y, the dtype and device of `x`.

    On the CPU, with no gradient to track, the T steps run over numpy views of the same memory:
    the same float operations in the same order (a product, then a sum, each rounded), so the
    result is bit-identical to the torch loop, at about a third of its cost for T = 32 (each torch
    op pays several microseconds of dispatch, paid once per learner batch or minibatch whatever its
    size: docs/logs/learner_fixed_costs_2026-11-24.md). Elsewhere (CUDA, autograd) the torch loop.
    """
    T = x.shape[0]
    out = torch.empty_like(x)
    needs_grad = torch.is_grad_enabled() and (x.requires_grad or coef.requires_grad or init.requires_grad)
    same = x.dtype == coef.dtype == init.dtype and x.device == coef.device == init.device
    if same and x.device.type == "cpu" and not needs_grad and x.dtype in (torch.float32, torch.float64):
        o, xs, cs = out.numpy(), x.detach().numpy(), coef.detach().numpy()
        acc = np.broadcast_to(init.detach().numpy(), o.shape[1:])
        for t in range(T - 1, -1, -1):
            acc = xs[t] + cs[t] * acc
            o[t] = acc
        return out
    acc_t = init
    for t in range(T - 1, -1, -1):
        acc_t = x[t] + coef[t] * acc_t
        out[t] = acc_t
    return out


def bootstrap_truncated_rewards(rewards: Tensor, values: Tensor, truncated: Tensor, gamma: float) -> Tensor:
    """`r_t + γ·V(s_t)·truncated_t`: bootstraps an episode cut by a time limit.

    The value of the final observation is approximated by that of the last observation acted on,
    as rl_games' `value_bootstrap` does; the episode is then treated as ended (no value is taken
    from the next observation, which belongs to the next episode).

    Args:
        rewards, values, truncated: `[T, B]` float32 (`truncated` 1 where the step hit a time limit
            and the env did not terminate).
    Returns:
        `[T, B]` float32 rewards.
    """
    return rewards + gamma * values * truncated


def discounted_returns(rewards: Tensor, dones: Tensor, bootstrap: Tensor, gamma: float) -> Tensor:
    """n-step discounted returns `G_t = r_t + γ (1 - d_t) G_{t+1}`, with `G_T = bootstrap`.

    Args:
        rewards, dones: `[T, B]` float32.
        bootstrap: `[B]` float32 value of the observation after the last step.
    Returns:
        `[T, B]` float32 returns.
    """
    return reverse_scan(rewards, gamma * (1.0 - dones), bootstrap)


def gae(rewards: Tensor, values: Tensor, dones: Tensor, gamma: float, lam: float) -> tuple[Tensor, Tensor]:
    """Generalized Advantage Estimation (Schulman et al. 2016, eq. 16).

    `δ_t = r_t + γ (1 - d_t) V_{t+1} - V_t`, `A_t = δ_t + γ λ (1 - d_t) A_{t+1}`, returns `A_t + V_t`.

    Args:
        rewards, dones: `[T, B]` float32.
        values: `[T+1, B]` float32.
        gamma, lam: discount γ and GAE λ.
    Returns:
        advantages and value targets, both `[T, B]` float32.
    """
    not_done = 1.0 - dones
    deltas = rewards + gamma * not_done * values[1:] - values[:-1]
    adv = reverse_scan(deltas, gamma * lam * not_done, torch.zeros_like(rewards[0]))
    return adv, adv + values[:-1]


def vtrace(
    rewards: Tensor,
    values: Tensor,
    dones: Tensor,
    log_rhos: Tensor,
    gamma: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """V-trace targets and policy-gradient advantages (Espeholt et al. 2018, IMPALA, eq. 1 and sec. 4.2).

    `ρ_t = min(ρ̄, π/μ)`, `c_t = min(c̄, π/μ)`, `δ_t = ρ_t (r_t + γ_t V_{t+1} - V_t)` with
    `γ_t = γ (1 - d_t)`; targets `v_t = V_t + δ_t + γ_t c_t (v_{t+1} - V_{t+1})`, `v_T = V_T`;
    advantages `ρ_t (r_t + γ_t v_{t+1} - V_t)`. With ρ̄ = c̄ = 1 and on-policy data (log_rhos = 0)
    the targets equal the λ = 1 returns.

    Args:
        rewards, dones: `[T, B]` float32.
        values: `[T+1, B]` float32 (detached) value estimates of the target policy.
        log_rhos: `[T, B]` float32 `log π(a_t|s_t) - log μ(a_t|s_t)` (target minus behavior).
    Returns:
        targets `v_t` and advantages, both `[T, B]` float32.
    """
    rhos = log_rhos.exp()
    clipped_rhos = rhos.clamp(max=rho_bar)
    cs = rhos.clamp(max=c_bar)
    discounts = gamma * (1.0 - dones)
    deltas = clipped_rhos * (rewards + discounts * values[1:] - values[:-1])
    vs_minus_v = reverse_scan(deltas, discounts * cs, torch.zeros_like(rewards[0]))
    vs = vs_minus_v + values[:-1]
    vs_next = torch.cat([vs[1:], values[-1:]], dim=0)
    advantages = clipped_rhos * (rewards + discounts * vs_next - values[:-1])
    return vs, advantages
