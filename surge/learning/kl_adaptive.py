"""rl_games' KL-adaptive learning rate (`--lr_schedule=kl_adaptive_minibatch|kl_adaptive_epoch`).

The rule is rl_games 1.6.5's `AdaptiveScheduler.update` (rl_games/common/schedulers.py): after a
minibatch (its `schedule_type: legacy`, rl_games' default) or after a pass over the batch (its
`schedule_type: standard`, on the mean of that pass's minibatch KLs),

    kl > 2 * threshold    ->  lr = max(lr / 1.5, lr_min)
    kl < 0.5 * threshold  ->  lr = min(lr * 1.5, lr_max)

The KL is the exact one of the two action distributions, averaged over the minibatch's valid
samples, taken in rl_games' direction: `KL(current || behavior)` (rl_games'
`torch_ext.policy_kl(mu, sigma, old_mu, old_sigma)` is the KL of its first Gaussian from its
second), with the current policy's distribution from the forward pass before the optimizer step.
For discrete actions rl_games uses `0.5 * (old_logp - logp)^2` of the taken action instead; surge
uses the exact categorical KL there too (docs/ppo_options.md).

The current rate is learner state: `KLAdaptiveLR.state_dict` goes into the learner's checkpoint.
"""

from __future__ import annotations

import math
from typing import Any


def adaptive_lr_update(lr: float, kl: float, threshold: float, lr_min: float, lr_max: float) -> float:
    """One step of rl_games' `AdaptiveScheduler.update` (module docstring): the new learning rate.

    Args:
        lr: current learning rate.
        kl: the measured KL (nats), a finite float.
        threshold: the KL target (rl_games' `kl_threshold`), > 0.
        lr_min, lr_max: the bounds the rule keeps the rate in when it moves it.
    """
    if kl > 2.0 * threshold:
        lr = max(lr / 1.5, lr_min)
    if kl < 0.5 * threshold:
        lr = min(lr * 1.5, lr_max)
    return lr


class KLAdaptiveLR:
    """The current KL-adaptive learning rate of one learner.

    Args:
        lr: the starting rate (the policy's `learning_rate`).
        threshold, lr_min, lr_max: `--lr_schedule_kl_threshold`, `--lr_adaptive_min`, `--lr_adaptive_max`.
        per_epoch: True for `kl_adaptive_epoch` (one update per pass over the batch, on the mean
            KL of its minibatches), False for `kl_adaptive_minibatch` (one per minibatch).
    """

    def __init__(self, lr: float, threshold: float, lr_min: float, lr_max: float, per_epoch: bool):
        self.lr = float(lr)
        self.threshold, self.lr_min, self.lr_max = threshold, lr_min, lr_max
        self.per_epoch = per_epoch
        self.updates = 0  # rule applications so far (a non-finite KL is not one)

    def update(self, kl: float) -> float:
        """Applies the rule to the measured `kl`; a non-finite KL (a skipped optimizer step's)
        leaves the rate as it is. Returns the new rate."""
        if math.isfinite(kl):
            self.lr = adaptive_lr_update(self.lr, kl, self.threshold, self.lr_min, self.lr_max)
            self.updates += 1
        return self.lr

    def state_dict(self) -> dict[str, Any]:
        """`{"lr": float, "updates": int}`."""
        return {"lr": self.lr, "updates": self.updates}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores `state_dict`'s rate and count."""
        self.lr = float(state["lr"])
        self.updates = int(state.get("updates", 0))
