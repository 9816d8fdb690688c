"""A2C's learner."""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import Tensor

from surge.algorithms.a2c.loss import a2c_loss
from surge.algorithms.a2c.params import A2CParams
from surge.cfg.config import Config, algo_params
from surge.cfg.policy_roles import learning_policies
from surge.data.trajectory_batch import TrajectoryBatch
from surge.learning.base import Batch, LearnerBase

log = logging.getLogger("surge")


class A2CLearner(LearnerBase):
    """One gradient step of `a2c_loss` per batch, one collection round (see `surge.algorithms.a2c.declaration`)."""

    def __init__(self, cfg: Config, *args: Any, **kwargs: Any):
        super().__init__(cfg, *args, **kwargs)
        popart = algo_params(cfg, A2CParams).popart
        self.popart = popart and cfg.normalize_returns
        if popart and not cfg.normalize_returns and self.policy_id == learning_policies(cfg)[0]:
            log.info(
                "A2C: --popart has no effect with --normalize_returns=False (the critic learns raw returns)"
            )

    def prepare_batch(self, slots: Tensor) -> TrajectoryBatch:
        """`LearnerBase.prepare_batch` with the behavior values as old_values `[T, N]`."""
        b = super().prepare_batch(slots)
        b.old_values = b.extra.pop("values")
        return b

    def train_batch(self, b: Batch, env_frames: int = 0) -> dict[str, float]:
        """Trains one step on a batch from `prepare_batch` (a dict of its names is taken as
        `TrajectoryBatch.from_mapping` gives it); returns the loss parts, grad_norm, lr,
        policy_lag_min/avg/max (policy versions) and skipped_updates (1 when the step was skipped for
        a non-finite loss or gradient, see `LearnerBase.apply_gradients`)."""
        cfg, model = self.cfg, self.model
        b = TrajectoryBatch.from_mapping(b)
        lr = self.set_learning_rate(env_frames)
        self._mask_stale(b)
        self._update_obs_normalizer(b)
        T = b.rewards.shape[0]
        adv, targets = self._gae_targets(b)  # gae_lambda = 1: n-step returns, bootstrapped
        obs = {k: v[:T] for k, v in b.obs.items()} if isinstance(b.obs, dict) else b.obs[:T]
        # the core resets its state at episode ends, or nowhere with --zero_rnn_on_done=False
        ended = torch.maximum(b.terminated, b.truncated) if cfg.zero_rnn_on_done else None
        resets = torch.zeros_like(b.terminated) if ended is None else ended
        logits, values = model.evaluate(obs, b.rnn_states[:T], resets, cfg.recurrence)
        valids = b.valids
        assert valids is not None  # `_mask_stale`
        if cfg.normalize_advantage:
            adv = self.normalize_advantages(adv, valids)
        dist = model.distribution(logits.reshape(-1, logits.shape[-1]))
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
        loss, stats = a2c_loss(
            dist.log_prob(flat(b.actions)),
            dist.entropy(),
            flat(values),
            flat(adv),
            flat(targets),
            flat(valids),
            self.hp.value_loss_coeff,
            self.hp.exploration_loss_coeff,
        )
        grad_norm = self.apply_gradients(loss)
        out = {k: float(v) for k, v in stats.items()}
        out.update(
            loss=float(loss.detach()),
            grad_norm=float(grad_norm),
            lr=lr,
            adv_mean=float(adv.mean()),
            value_mean=float(values.detach().mean()),
            target_mean=float(targets.mean()),
            policy_version=float(self.policy_version),
            samples=float(valids.numel()),
            **self.lag_stats(b),
            **self.skip_stats(int(self.last_step_skipped)),
        )
        return out
