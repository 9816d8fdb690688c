"""The (A)PPO loss on one minibatch: clipped policy loss, clipped value loss, exploration loss and
the optional fixed KL penalty. Pure function of tensors; the learner decides what goes in."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from surge.models.distributions import ActionDistribution


@dataclass
class PPOLossConfig:
    """Coefficients of the loss (a subset of `Config`)."""

    ppo_clip_ratio: float
    ppo_clip_value: float
    value_loss_coeff: float
    exploration_loss: str
    exploration_loss_coeff: float
    kl_loss_coeff: float
    #: the ratio's lower clip: 1/(1+ε) (False, Sample Factory 2) or 1-ε (True, Schulman et al. 2017 eq. 7)
    symmetric_clip: bool = False


def masked_mean(x: Tensor, mask: Tensor, count: Tensor) -> Tensor:
    """Mean of `x` over the entries where `mask` (same shape, float 0/1) is 1; `count` = mask.sum() ≥ 1."""
    return (x * mask).sum() / count


def ppo_loss(
    dist: ActionDistribution,
    behavior_dist: ActionDistribution,
    actions: Tensor,
    behavior_log_probs: Tensor,
    advantages: Tensor,
    values: Tensor,
    old_values: Tensor,
    targets: Tensor,
    valids: Tensor,
    cfg: PPOLossConfig,
    with_stats: bool = True,
) -> tuple[Tensor, dict[str, Tensor]]:
    """Total loss and its parts (detached) for N samples.

    Policy loss (Schulman et al. 2017, eq. 7) with Sample Factory's clipping of the ratio
    r to [1/(1+ε), 1+ε], or the paper's [1-ε, 1+ε] with `cfg.symmetric_clip`: `-min(r·A, clip(r)·A)`. Value loss: `max((V - v)², (V_clip - v)²)` with
    `V_clip = V_old + clip(V - V_old, -δ, δ)`, δ = `ppo_clip_value`. Exploration: `-entropy` or
    the symmetric KL to the uniform policy. KL penalty: `KL(μ || π)` (Schulman et al. 2017, eq. 8).

    Args:
        dist, behavior_dist: current (target) and behavior action distributions over N samples.
        actions: `[N, *action_shape]`.
        behavior_log_probs, advantages, values, old_values, targets: `[N]` float32.
        valids: `[N]` float32 1/0 mask of samples to train on.
        with_stats: False leaves out the diagnostic statistics (entropy, approx_kl, clip_fraction,
            ratio_mean and the loss parts), which cost about 20 small ops; the loss is the same.
    Returns:
        scalar loss, and a dict of scalar statistics (only `kl_loss`, when there is one, without
        `with_stats`).
    """
    count = valids.sum().clamp(min=1.0)
    log_probs = dist.log_prob(actions)
    log_ratio = log_probs - behavior_log_probs
    ratio = log_ratio.exp()
    eps = cfg.ppo_clip_ratio
    clipped = ratio.clamp(1.0 - eps if cfg.symmetric_clip else 1.0 / (1.0 + eps), 1.0 + eps)
    policy_loss = -masked_mean(torch.min(ratio * advantages, clipped * advantages), valids, count)

    v_clipped = old_values + (values - old_values).clamp(-cfg.ppo_clip_value, cfg.ppo_clip_value)
    v_loss = torch.max((values - targets).pow(2), (v_clipped - targets).pow(2))
    value_loss = masked_mean(v_loss, valids, count) * cfg.value_loss_coeff

    entropy = None  # computed only where something reads it (a statistic or the loss)
    if cfg.exploration_loss == "symmetric_kl":
        # clamped at 30 as in Sample Factory 2 (a near-deterministic head cannot blow up the loss)
        exploration = masked_mean(dist.symmetric_kl_with_uniform(), valids, count).clamp(max=30.0)
    else:
        entropy = dist.entropy()
        exploration = -masked_mean(entropy, valids, count)
    exploration_loss = exploration * cfg.exploration_loss_coeff

    loss = policy_loss + value_loss + exploration_loss
    stats: dict[str, Tensor] = {}
    if cfg.kl_loss_coeff > 0.0:
        kl_loss = masked_mean(behavior_dist.kl(dist), valids, count) * cfg.kl_loss_coeff
        loss = loss + kl_loss
        stats["kl_loss"] = kl_loss.detach()

    if not with_stats:
        return loss, stats
    with torch.no_grad():
        stats.update(
            policy_loss=policy_loss.detach(),
            value_loss=value_loss.detach(),
            exploration_loss=exploration_loss.detach(),
            entropy=masked_mean(dist.entropy() if entropy is None else entropy, valids, count),
            # k3 estimator of KL(behavior || target), Schulman 2020 "Approximating KL divergence"
            approx_kl=masked_mean((ratio - 1.0) - log_ratio, valids, count),
            clip_fraction=masked_mean(((ratio - 1.0).abs() > eps).float(), valids, count),
            ratio_mean=masked_mean(ratio, valids, count),
        )
    return loss, stats
