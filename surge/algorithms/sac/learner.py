"""SAC's learner."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from surge.algorithms.ddpg_td3.losses import critic_loss
from surge.algorithms.sac.losses import (
    default_target_entropy,
    sac_actor_loss,
    sac_soft_target,
    sac_temperature_loss,
)
from surge.algorithms.sac.model import LogAlpha
from surge.algorithms.sac.params import SACParams, parse_ent_coef
from surge.learning.qpg_common import (
    ActingActor,
    adam,
    optimizer_step,
    qpg_minibatch,
)
from surge.learning.replay_learner import ReplayLearnerBase
from surge.learning.target_networks import polyak_update
from surge.models.squashed_gaussian import squashed_gaussian_sample
from surge.replay.samples import TransitionSample


class SACLearner(ReplayLearnerBase):
    """SAC's update (`surge.algorithms.sac.declaration`); optimizers "model" (the actor), "critic" and, when the
    temperature is learned, "ent_coef", all following the learning rate."""

    model: ActingActor  # type: ignore[assignment]  # the acting module, not an ActorCritic
    params_type = SACParams
    every_optimizer_follows_lr = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        p = self.params
        assert isinstance(p, SACParams)
        self.qpg: SACParams = p
        self.learn_alpha, _ = parse_ent_coef(p.ent_coef)
        self.target_entropy = (
            default_target_entropy(self.model.action_dim)
            if p.target_entropy == "auto"
            else float(p.target_entropy)
        )
        self.optimizers["critic"] = adam(self.learner_modules["critic"].parameters(), self)
        if self.learn_alpha:
            self.optimizers["ent_coef"] = adam([self.log_alpha], self)

    @property
    def log_alpha(self) -> Tensor:
        """log α, scalar float32 (the "log_alpha" learner module's parameter)."""
        module = self.learner_modules["log_alpha"]
        assert isinstance(module, LogAlpha)
        return module.value

    def update(self, samples: TransitionSample) -> dict[str, float]:
        """`ReplayLearnerBase.update`: `update_normalized` on `qpg_minibatch(samples)`."""
        return self.update_normalized(qpg_minibatch(samples, self.model))

    def step(self, name: str, loss: Tensor, params: list[Tensor]) -> bool:
        """`optimizer_step` of this learner."""
        return optimizer_step(self, name, loss, params)

    def update_normalized(self, batch: TransitionSample) -> dict[str, float]:
        """One update on a `qpg_minibatch`; returns the losses, the temperature, the entropy and
        q_mean."""
        actor, m = self.model, self.learner_modules
        critic, critic_target = m["critic"], m["critic_target"]
        log_alpha = self.log_alpha
        obs = batch.obs
        mean, log_std = actor.distribution_params(obs)
        noise = torch.randn(mean.shape, generator=self.generator).to(mean.device)
        pi = _squashed(mean, log_std, noise)
        alpha = log_alpha.detach().exp()
        stats: dict[str, float] = {}
        if self.learn_alpha:
            loss_alpha = sac_temperature_loss(log_alpha, pi[1], self.target_entropy)
            self.step("ent_coef", loss_alpha, [log_alpha])
            stats["ent_coef_loss"] = float(loss_alpha.detach())
        with torch.no_grad():
            n_mean, n_log_std = actor.distribution_params(batch.next_obs)
            n_noise = torch.randn(n_mean.shape, generator=self.generator).to(n_mean.device)
            next_a, next_logp = _squashed(n_mean, n_log_std, n_noise)
            q1_t, q2_t = critic_target(batch.next_obs, next_a)
            y = sac_soft_target(batch.returns, batch.discounts, q1_t, q2_t, next_logp, alpha)
        q1, q2 = critic(obs, batch.actions)
        loss_q = 0.5 * critic_loss([q1, q2], y)
        self.step("critic", loss_q, list(critic.parameters()))
        q1_pi, q2_pi = critic(obs, pi[0])
        loss_pi = sac_actor_loss(pi[1], q1_pi, q2_pi, alpha)
        self.step("model", loss_pi, list(actor.parameters()))
        polyak_update(critic_target, critic, self.qpg.tau)
        stats.update(
            critic_loss=float(loss_q.detach()),
            actor_loss=float(loss_pi.detach()),
            ent_coef=float(alpha),
            entropy=float(-pi[1].detach().mean()),
            q_mean=float(q1.detach().mean()),
        )
        return stats


def _squashed(mean: Tensor, log_std: Tensor, noise: Tensor) -> tuple[Tensor, Tensor]:
    """`(actions [B, D], log_probs [B])` of `squashed_gaussian_sample` with the draws `noise`."""
    s = squashed_gaussian_sample(mean, log_std, noise=noise)
    return s.actions, s.log_probs


def sac_learner(*args: Any, **kwargs: Any) -> SACLearner:
    return SACLearner(*args, **kwargs)
