"""Return and advantage estimators: pure functions on time-major `[T, B]` float32 tensors.

Conventions shared by all of them:
- `rewards[t]`, `terminated[t]`, `truncated[t]` belong to the transition from step t to t+1.
- `values` has T+1 rows: `values[T]` is the bootstrap value of the observation after the last step.
- An episode ends at t when it terminated or was truncated there (`ended_t = terminated_t or
  truncated_t`); the recursion never crosses an end (`values[t+1]` then belongs to the next
  episode). The two ends differ in what follows the step:
  - terminated: the true return after it is 0, so nothing is bootstrapped;
  - truncated (a time limit, the env did not terminate): the return after it is unknown and is
    bootstrapped with `truncation_values[t]`, the value of the last observation acted on standing
    in for that of the final observation, which the rollout does not keep (rl_games'
    `value_bootstrap`); with `truncation_values=None` a truncation bootstraps 0, as a termination.
  A step both terminated and truncated counts as terminated.
- `truncated=None` means no step was truncated: a caller with a single `dones` mask passes it as
  `terminated` (every end zeroes the bootstrap).
"""

from __future__ import annotations

import functools

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
    size: docs/logs/learner_fixed_costs_2026-11-24.md). On the CPU with autograd, the torch loop.
    Off the CPU, `reverse_scan_matrix`: about 10 kernel launches where the loop makes 3 per step
    (a learner's host side on a GPU is mostly launches), or the loop where `[T, T, B]` is too large.
    """
    T = x.shape[0]
    if x.device.type != "cpu":
        if T * T * x[0].numel() <= MATRIX_SCAN_MAX_ELEMENTS:
            return reverse_scan_matrix(x, coef, init)
        return _reverse_scan_loop(x, coef, init)
    out = torch.empty_like(x)
    needs_grad = torch.is_grad_enabled() and (x.requires_grad or coef.requires_grad or init.requires_grad)
    same = x.dtype == coef.dtype == init.dtype and x.device == coef.device == init.device
    if same and not needs_grad and x.dtype in (torch.float32, torch.float64):
        o, xs, cs = out.numpy(), x.detach().numpy(), coef.detach().numpy()
        acc = np.broadcast_to(init.detach().numpy(), o.shape[1:])
        for t in range(T - 1, -1, -1):
            acc = xs[t] + cs[t] * acc
            o[t] = acc
        return out
    return _reverse_scan_loop(x, coef, init)


def _reverse_scan_loop(x: Tensor, coef: Tensor, init: Tensor) -> Tensor:
    """`reverse_scan` as T torch steps (3 operations each)."""
    out = torch.empty_like(x)
    acc_t = init
    for t in range(x.shape[0] - 1, -1, -1):
        acc_t = x[t] + coef[t] * acc_t
        out[t] = acc_t
    return out


#: `reverse_scan_matrix`'s `[T, T, B]` products above this many elements (256 MiB of float32) would
#: cost more memory than the loop's launches cost time
MATRIX_SCAN_MAX_ELEMENTS = 1 << 26


@functools.lru_cache(maxsize=16)
def _triangles(T: int, batch_dims: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """`[T, T, 1...]` bool masks of `k >= t` and `k < t`, kept per shape and device: made on every
    call they were two of the scan's kernels."""
    upper = torch.ones(T, T, dtype=torch.bool, device=device).triu().view((T, T) + (1,) * batch_dims)
    return upper, ~upper


def reverse_scan_matrix(x: Tensor, coef: Tensor, init: Tensor) -> Tensor:
    """`reverse_scan`'s recurrence unrolled: `y_t = Σ_{s>=t} (Π_{t<=k<s} coef_k) x_s +
    (Π_{t<=k<T} coef_k) init`, the products from one `cumprod` over a `[T, T, B]` table and the
    sum as one reduction, in about 10 operations whatever T (the loop: 3T). The same products
    and terms as the loop, summed in another order: equal to it within float rounding.

    Args:
        x, coef: `[T, B...]` float tensors on one device.
        init: broadcastable to `x[0]`.
    Returns:
        `[T, B...]` y, the dtype and device of `x`; differentiable in all three inputs.
    """
    T = x.shape[0]
    upper, lower = _triangles(T, x.dim() - 1, x.device)  # [t, k]: k >= t, and k < t
    # prods[t, k] = Π_{t<=j<=k} coef_j for k >= t (below the diagonal: ones, masked below)
    prods = coef.unsqueeze(0).masked_fill(lower, 1.0).cumprod(dim=1)
    # the weight of x_s in y_t: Π_{t<=k<s} coef_k, i.e. 1 at s = t and prods[t, s-1] above it
    weights = torch.cat([torch.ones_like(prods[:, :1]), prods[:, :-1]], dim=1) * upper
    return (weights * x.unsqueeze(0)).sum(dim=1) + prods[:, -1] * init


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


def _episode_ends(
    rewards: Tensor,
    terminated: Tensor,
    truncated: Tensor | None,
    truncation_values: Tensor | None,
    gamma: float,
) -> tuple[Tensor, Tensor]:
    """The rewards with the truncated steps' bootstrap folded in
    (`r_t + γ·truncation_values_t·[truncated_t and not terminated_t]`) and `ended` `[T, B]` float32
    (1 where the episode terminated or was truncated). The same float operations in the same order
    as folding with `bootstrap_truncated_rewards` before the estimator, so the results are
    bit-identical to that spelling."""
    if truncated is None:
        return rewards, terminated
    ended = torch.maximum(terminated, truncated)
    if truncation_values is not None:
        # ended - terminated: 1 exactly where truncated and not terminated (0/1 masks)
        rewards = bootstrap_truncated_rewards(rewards, truncation_values, ended - terminated, gamma)
    return rewards, ended


def discounted_returns(
    rewards: Tensor,
    terminated: Tensor,
    bootstrap: Tensor,
    gamma: float,
    *,
    truncated: Tensor | None = None,
    truncation_values: Tensor | None = None,
) -> Tensor:
    """n-step discounted returns `G_t = r'_t + γ (1 - e_t) G_{t+1}`, with `G_T = bootstrap`,
    `e_t = terminated_t or truncated_t` and `r'_t = r_t + γ·truncation_values_t` on a step truncated
    and not terminated (`r_t` elsewhere; module docstring).

    Args:
        rewards, terminated: `[T, B]` float32 (`terminated` 0/1).
        bootstrap: `[B]` float32 value of the observation after the last step.
        truncated: `[T, B]` float32 0/1, or None (no truncation).
        truncation_values: `[T, B]` float32 bootstrap value of a truncated step, or None (0).
    Returns:
        `[T, B]` float32 returns.
    """
    rewards, ended = _episode_ends(rewards, terminated, truncated, truncation_values, gamma)
    return reverse_scan(rewards, gamma * (1.0 - ended), bootstrap)


def gae(
    rewards: Tensor,
    values: Tensor,
    terminated: Tensor,
    gamma: float,
    lam: float,
    *,
    truncated: Tensor | None = None,
    truncation_values: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Generalized Advantage Estimation (Schulman et al. 2016, eq. 16), episode ends kept apart.

    `δ_t = r'_t + γ (1 - e_t) V_{t+1} - V_t`, `A_t = δ_t + γ λ (1 - e_t) A_{t+1}`, returns `A_t + V_t`,
    with `e_t = terminated_t or truncated_t` (the recursion stops at either end) and
    `r'_t = r_t + γ·truncation_values_t` on a step truncated and not terminated, `r_t` elsewhere:
    a termination bootstraps 0, a truncation the value it is given (module docstring).

    Args:
        rewards, terminated: `[T, B]` float32 (`terminated` 0/1).
        values: `[T+1, B]` float32.
        gamma, lam: discount γ and GAE λ.
        truncated: `[T, B]` float32 0/1, or None (no truncation).
        truncation_values: `[T, B]` float32 bootstrap value of a truncated step, or None (0).
    Returns:
        advantages and value targets, both `[T, B]` float32.
    """
    rewards, ended = _episode_ends(rewards, terminated, truncated, truncation_values, gamma)
    not_done = 1.0 - ended
    deltas = rewards + gamma * not_done * values[1:] - values[:-1]
    adv = reverse_scan(deltas, gamma * lam * not_done, torch.zeros_like(rewards[0]))
    return adv, adv + values[:-1]


def vtrace(
    rewards: Tensor,
    values: Tensor,
    terminated: Tensor,
    log_rhos: Tensor,
    gamma: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    *,
    truncated: Tensor | None = None,
    truncation_values: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """V-trace targets and policy-gradient advantages (Espeholt et al. 2018, IMPALA, eq. 1 and sec. 4.2).

    `ρ_t = min(ρ̄, π/μ)`, `c_t = min(c̄, π/μ)`, `δ_t = ρ_t (r'_t + γ_t V_{t+1} - V_t)` with
    `γ_t = γ (1 - e_t)`; targets `v_t = V_t + δ_t + γ_t c_t (v_{t+1} - V_{t+1})`, `v_T = V_T`;
    advantages `ρ_t (r'_t + γ_t v_{t+1} - V_t)`. `e_t = terminated_t or truncated_t` and
    `r'_t = r_t + γ·truncation_values_t` on a step truncated and not terminated, `r_t` elsewhere
    (module docstring). With ρ̄ = c̄ = 1 and on-policy data (log_rhos = 0) the targets equal the
    λ = 1 returns.

    Args:
        rewards, terminated: `[T, B]` float32 (`terminated` 0/1).
        values: `[T+1, B]` float32 (detached) value estimates of the target policy.
        log_rhos: `[T, B]` float32 `log π(a_t|s_t) - log μ(a_t|s_t)` (target minus behavior).
        truncated: `[T, B]` float32 0/1, or None (no truncation).
        truncation_values: `[T, B]` float32 bootstrap value of a truncated step, or None (0).
    Returns:
        targets `v_t` and advantages, both `[T, B]` float32.
    """
    rewards, ended = _episode_ends(rewards, terminated, truncated, truncation_values, gamma)
    rhos = log_rhos.exp()
    clipped_rhos = rhos.clamp(max=rho_bar)
    cs = rhos.clamp(max=c_bar)
    discounts = gamma * (1.0 - ended)
    deltas = clipped_rhos * (rewards + discounts * values[1:] - values[:-1])
    vs_minus_v = reverse_scan(deltas, discounts * cs, torch.zeros_like(rewards[0]))
    vs = vs_minus_v + values[:-1]
    vs_next = torch.cat([vs[1:], values[-1:]], dim=0)
    advantages = clipped_rhos * (rewards + discounts * vs_next - values[:-1])
    return vs, advantages
