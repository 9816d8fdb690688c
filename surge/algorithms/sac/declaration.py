"""Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications",
arXiv:1812.05905, Algorithm 1) on the engine: `--algo=SAC`, continuous Box actions, replay feed.

One update on a minibatch (actions in [-1, 1]^D, `surge.learning.qpg_common`), in
Stable-Baselines3's order, with α = exp(log α) read before its own step:

    ã, log π(ã|s) ~ π(·|s)                                  reparameterised, tanh-squashed (eq. 8)
    J(α) = mean −log α·(log π(ã|s) + H̄)                     temperature (eq. 18), when ent_coef=auto
    y = r + d·(min_k Q'k(s', a') − α log π(a'|s')), a' ~ π(·|s')   soft target (eqs. 3, 5)
    J_Q = ½ Σ_k mean (Q_k(s, a) − y)²                        (eq. 5, two critics)
    J_π = mean α log π(ã|s) − min_k Q_k(s, ã)               (eq. 7)
    θ' ← τθ + (1 − τ)θ' for both critics' target

d = γ (0 after a termination). Optimizers: "model" (the actor), "critic", "ent_coef" (log α).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.algorithms.ddpg_td3.losses import critic_loss
from surge.algorithms.sac.losses import (
    default_target_entropy,
    sac_actor_loss,
    sac_soft_target,
    sac_temperature_loss,
    squashed_gaussian_sample,
)
from surge.cfg.config import Config, algo_params, param
from surge.errors import ConfigError
from surge.learning.algorithm import ModelParts
from surge.learning.qpg_common import (
    QPG_DEFAULTS,
    ActingActor,
    QPGParams,
    adam,
    make_actor,
    optimizer_step,
    qpg_algorithm,
    qpg_minibatch,
)
from surge.learning.replay_learner import ReplayLearnerBase
from surge.learning.target_networks import polyak_update
from surge.models.continuous_networks import TwinQCritic


def _parse_ent_coef(value: str) -> tuple[bool, float]:
    """`auto` -> (learned, 1.0), `auto_0.1` -> (learned, 0.1), `0.2` -> (fixed, 0.2).

    Raises:
        ConfigError: anything else, or a value <= 0 or non-finite.
    """
    learned, text = value.startswith("auto"), value
    if learned:
        text = value[5:] if value.startswith("auto_") else ("1.0" if value == "auto" else "")
    try:
        alpha = float(text)
    except ValueError:
        alpha = math.nan
    if not (math.isfinite(alpha) and alpha > 0):
        raise ConfigError(
            "ent_coef", f"must be auto, auto_<init> or a float > 0, got {value!r}.", "e.g. --ent_coef=auto."
        )
    return learned, alpha


@dataclass
class SACParams(QPGParams):
    """SAC's own flags (Stable-Baselines3's names and defaults)."""

    ent_coef: str = param(
        "auto",
        "Entropy temperature α: auto (learned, from 1), auto_<init> (learned, from init) or a fixed float.",
    )
    target_entropy: str = param("auto", "Target entropy H̄ of the learned α: auto (−dim(A)) or a float.")

    def validate(self) -> None:
        super().validate()
        _parse_ent_coef(self.ent_coef)
        if self.target_entropy != "auto":
            try:
                ok = math.isfinite(float(self.target_entropy))
            except ValueError:
                ok = False
            if not ok:
                raise ConfigError(
                    "target_entropy",
                    f"must be auto or a float, got {self.target_entropy!r}.",
                    "e.g. --target_entropy=auto.",
                )


class LogAlpha(nn.Module):
    """log α, a learner module (saved and restored with the critics): `value` a scalar parameter."""

    def __init__(self, init: float):
        super().__init__()
        self.value = nn.Parameter(torch.tensor(math.log(init), dtype=torch.float32))


def sac_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    """`Algorithm.make_model` of SAC: the Gaussian actor acts; the twin critic, its target and
    log α are the learner's."""
    p = algo_params(cfg, SACParams)
    actor = make_actor(cfg, obs_space, action_space, gaussian=True, noise_std=0.0)
    critic = TwinQCritic(cfg, obs_space, action_space, hidden_sizes=tuple(int(h) for h in p.net_arch))
    return ModelParts(
        actor,
        {
            "critic": critic,
            "critic_target": copy.deepcopy(critic).requires_grad_(False),
            "log_alpha": LogAlpha(_parse_ent_coef(p.ent_coef)[1]),
        },
    )


class SACLearner(ReplayLearnerBase):
    """SAC's update (module docstring); optimizers "model" (the actor), "critic" and, when the
    temperature is learned, "ent_coef", all following the learning rate."""

    model: ActingActor  # type: ignore[assignment]  # the acting module, not an ActorCritic
    params_type = SACParams
    every_optimizer_follows_lr = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        p = self.params
        assert isinstance(p, SACParams)
        self.qpg: SACParams = p
        self.learn_alpha, _ = _parse_ent_coef(p.ent_coef)
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

    def update(self, samples: dict[str, Any]) -> dict[str, float]:
        """`ReplayLearnerBase.update`: `update_normalized` on `qpg_minibatch(samples)`."""
        return self.update_normalized(qpg_minibatch(samples, self.model))

    def step(self, name: str, loss: Tensor, params: list[Tensor]) -> bool:
        """`optimizer_step` of this learner."""
        return optimizer_step(self, name, loss, params)

    def update_normalized(self, batch: dict[str, Any]) -> dict[str, float]:
        """One update on a `qpg_minibatch`; returns the losses, the temperature, the entropy and
        q_mean."""
        actor, m = self.model, self.learner_modules
        critic, critic_target = m["critic"], m["critic_target"]
        log_alpha = self.log_alpha
        obs = batch["obs"]
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
            n_mean, n_log_std = actor.distribution_params(batch["next_obs"])
            n_noise = torch.randn(n_mean.shape, generator=self.generator).to(n_mean.device)
            next_a, next_logp = _squashed(n_mean, n_log_std, n_noise)
            q1_t, q2_t = critic_target(batch["next_obs"], next_a)
            y = sac_soft_target(batch["returns"], batch["discounts"], q1_t, q2_t, next_logp, alpha)
        q1, q2 = critic(obs, batch["actions"])
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


SAC = qpg_algorithm(
    "SAC",
    "soft actor-critic (Haarnoja et al. 2018): twin Q, learned temperature, tanh-squashed Gaussian",
    sac_learner,
    sac_parts,
    SACParams,
    {**QPG_DEFAULTS, "learning_rate": 3e-4},
    metric_tags={
        "ent_coef_loss": "losses/ent_coef_loss",
        "ent_coef": "train/ent_coef",
        "entropy": "train/entropy",
    },
)
