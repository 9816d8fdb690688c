"""A2C's loss, a pure function of tensors."""

from __future__ import annotations

from torch import Tensor


def a2c_loss(
    log_probs: Tensor,
    entropy: Tensor,
    values: Tensor,
    advantages: Tensor,
    targets: Tensor,
    valids: Tensor,
    value_loss_coeff: float,
    entropy_coeff: float,
) -> tuple[Tensor, dict[str, Tensor]]:
    """The A2C loss (`surge.algorithms.a2c.declaration`) over samples; every argument `[N]` float32, `valids` 1 for
    samples to learn from. Returns the scalar loss and its parts (policy_loss, value_loss,
    exploration_loss, entropy)."""
    count = valids.sum().clamp(min=1.0)
    policy_loss = -(log_probs * advantages * valids).sum() / count
    value_loss = 0.5 * ((values - targets) ** 2 * valids).sum() / count
    mean_entropy = (entropy * valids).sum() / count
    exploration_loss = -entropy_coeff * mean_entropy
    loss = policy_loss + value_loss_coeff * value_loss + exploration_loss
    parts = {
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "exploration_loss": exploration_loss.detach(),
        "entropy": mean_entropy.detach(),
    }
    return loss, parts
