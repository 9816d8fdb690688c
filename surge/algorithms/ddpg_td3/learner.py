"""TD3 and DDPG's learner."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from surge.algorithms.ddpg_td3.losses import (
    clipped_double_q_target,
    critic_loss,
    ddpg_critic_target,
    deterministic_actor_loss,
    td3_smoothed_actions,
)
from surge.algorithms.ddpg_td3.params import DeterministicPGParams
from surge.learning.qpg_common import (
    ActingActor,
    adam,
    optimizer_step,
    qpg_minibatch,
)
from surge.learning.replay_learner import ReplayLearnerBase
from surge.learning.target_networks import polyak_update
from surge.replay.samples import TransitionSample


def q_values(critic: nn.Module, obs: Any, actions: Tensor) -> list[Tensor]:
    """The critic's outputs as a list of `[B]` (one for `QCritic`, two for `TwinQCritic`)."""
    out = critic(obs, actions)
    return list(out) if isinstance(out, tuple) else [out]


class TD3Learner(ReplayLearnerBase):
    """TD3's update (`surge.algorithms.ddpg_td3.td3`), and DDPG's: TD3 with its options off (its section's
    `td3_options`: no smoothing, no delay; one critic from `make_model`). Optimizers "model" (the
    actor) and "critic", both following the learning rate."""

    model: ActingActor  # type: ignore[assignment]  # the acting module, not an ActorCritic
    params_type = DeterministicPGParams  # TD3Params or DDPGParams
    every_optimizer_follows_lr = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        assert isinstance(self.params, DeterministicPGParams)
        self.qpg: DeterministicPGParams = self.params
        self.optimizers["critic"] = adam(self.learner_modules["critic"].parameters(), self)

    def update(self, samples: TransitionSample) -> dict[str, float]:
        """`ReplayLearnerBase.update`: `update_normalized` on `qpg_minibatch(samples)`."""
        return self.update_normalized(qpg_minibatch(samples, self.model))

    def step(self, name: str, loss: Tensor, params: list[Tensor]) -> bool:
        """`optimizer_step` of this learner."""
        return optimizer_step(self, name, loss, params)

    def update_normalized(self, batch: TransitionSample) -> dict[str, float]:
        """One update on a `qpg_minibatch`; returns critic_loss, q_mean and, on an actor step,
        actor_loss."""
        actor, m = self.model, self.learner_modules
        critic, critic_target, actor_target = m["critic"], m["critic_target"], m["actor_target"]
        smoothing, delay, sigma, clip = self.qpg.td3_options()
        obs, actions = batch.obs, batch.actions
        with torch.no_grad():
            next_a = actor_target(batch.next_obs).actions
            if smoothing:
                noise = torch.randn(next_a.shape, generator=self.generator).to(next_a.device)
                next_a = td3_smoothed_actions(next_a, sigma, clip, noise=noise)
            next_q = q_values(critic_target, batch.next_obs, next_a)
            if len(next_q) == 2:
                y = clipped_double_q_target(batch.returns, batch.discounts, next_q[0], next_q[1])
            else:
                y = ddpg_critic_target(batch.returns, batch.discounts, next_q[0])
        qs = q_values(critic, obs, actions)
        loss_q = critic_loss(qs, y)
        self.step("critic", loss_q, list(critic.parameters()))
        stats = {"critic_loss": float(loss_q.detach()), "q_mean": float(qs[0].detach().mean())}
        if self.update_number % delay == 0:
            loss_pi = deterministic_actor_loss(q_values(critic, obs, actor(obs).actions)[0])
            self.step("model", loss_pi, list(actor.parameters()))
            polyak_update(critic_target, critic, self.qpg.tau)
            polyak_update(actor_target, actor, self.qpg.tau)
            stats["actor_loss"] = float(loss_pi.detach())
        return stats


def td3_learner(*args: Any, **kwargs: Any) -> TD3Learner:
    return TD3Learner(*args, **kwargs)


def ddpg_learner(*args: Any, **kwargs: Any) -> TD3Learner:
    """DDPG's learner: TD3's with its options off (`DDPGParams.td3_options`: one critic from
    `ddpg_parts`, an actor step and target update after every critic step, no smoothing)."""
    return TD3Learner(*args, **kwargs)
