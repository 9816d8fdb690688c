"""TD3 (Fujimoto, van Hoof & Meger 2018, "Addressing Function Approximation Error in Actor-Critic
Methods", Algorithm 1) on the engine: `--algo=TD3`, continuous Box actions, replay feed.

One update on a minibatch of B transitions (actions in [-1, 1]^D, `surge.learning.qpg_common`):

    ã = clip(μ'(s') + clip(σ̃·ξ, −c, c), −1, 1)                  target policy smoothing (eqs. 14-15)
    y = r + d·min(Q'1(s', ã), Q'2(s', ã))                        clipped double Q (eq. 10)
    L_Q = mean (Q1(s, a) − y)² + mean (Q2(s, a) − y)²             both critics (Stable-Baselines3's sum)
    every `policy_delay`-th update: L_μ = −mean Q1(s, μ(s)) (eq. 6 of Silver et al. 2014), then
    θ' ← τθ + (1 − τ)θ' for both critics' and the actor's targets (Algorithm 1's last lines)

d is γ (0 after a termination; a truncated step bootstraps). The update count starts at 1, so the
first actor step is the `policy_delay`-th update, as Stable-Baselines3 counts. DDPG
(`surge.algorithms.ddpg_td3.ddpg`) is this learner with one critic, `policy_delay=1` and no smoothing.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.algorithms.ddpg_td3.losses import (
    clipped_double_q_target,
    critic_loss,
    ddpg_critic_target,
    deterministic_actor_loss,
    td3_smoothed_actions,
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
from surge.models.continuous_networks import QCritic, TwinQCritic


@dataclass
class DeterministicPGParams(QPGParams):
    """Flags of the deterministic-actor algorithms (TD3, DDPG)."""

    action_noise: str = param(
        "normal",
        "Exploration noise added to the actor's action: normal (Gaussian) or none.",
        ("normal", "none"),
    )
    action_noise_std: float = param(0.1, "Std of the Gaussian exploration noise, in [-1, 1] action units.")

    def validate(self) -> None:
        super().validate()
        if self.action_noise_std < 0:
            raise ConfigError(
                "action_noise_std",
                f"must be >= 0, got {self.action_noise_std}.",
                "e.g. --action_noise_std=0.1.",
            )

    @property
    def exploration_std(self) -> float:
        return self.action_noise_std if self.action_noise == "normal" else 0.0

    def td3_options(self) -> tuple[bool, int, float, float]:
        """(target policy smoothing, policy_delay, target_policy_noise, target_noise_clip): TD3's
        options, all off here (DDPG: no smoothing, the actor and targets updated at every step);
        `TD3Params` turns them on."""
        return False, 1, 0.0, 0.0


@dataclass
class TD3Params(DeterministicPGParams):
    """TD3's own flags (Stable-Baselines3's names and defaults, the paper's values)."""

    policy_delay: int = param(2, "Critic updates per actor and target update (d of Fujimoto et al. 2018).")
    target_policy_noise: float = param(0.2, "Std σ̃ of the target policy smoothing noise, in action units.")
    target_noise_clip: float = param(0.5, "Clip c of the target policy smoothing noise.")

    def validate(self) -> None:
        super().validate()
        if self.policy_delay < 1:
            raise ConfigError(
                "policy_delay", f"must be >= 1, got {self.policy_delay}.", "e.g. --policy_delay=2."
            )
        for name in ("target_policy_noise", "target_noise_clip"):
            if getattr(self, name) < 0:
                raise ConfigError(name, f"must be >= 0, got {getattr(self, name)}.", "")

    def td3_options(self) -> tuple[bool, int, float, float]:
        return True, self.policy_delay, self.target_policy_noise, self.target_noise_clip


def deterministic_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space, twin: bool) -> ModelParts:
    """The actor acts; the critic(s) and both targets are the learner's."""
    p: DeterministicPGParams = cfg.algo_params
    actor = make_actor(cfg, obs_space, action_space, gaussian=False, noise_std=p.exploration_std)
    sizes = tuple(int(h) for h in p.net_arch)
    critic: nn.Module = (TwinQCritic if twin else QCritic)(cfg, obs_space, action_space, hidden_sizes=sizes)
    return ModelParts(
        actor,
        {
            "actor_target": copy.deepcopy(actor).requires_grad_(False),
            "critic": critic,
            "critic_target": copy.deepcopy(critic).requires_grad_(False),
        },
    )


def td3_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    """`Algorithm.make_model` of TD3 (twin critics)."""
    algo_params(cfg, TD3Params)
    return deterministic_parts(cfg, obs_space, action_space, twin=True)


def q_values(critic: nn.Module, obs: Any, actions: Tensor) -> list[Tensor]:
    """The critic's outputs as a list of `[B]` (one for `QCritic`, two for `TwinQCritic`)."""
    out = critic(obs, actions)
    return list(out) if isinstance(out, tuple) else [out]


class TD3Learner(ReplayLearnerBase):
    """TD3's update (module docstring), and DDPG's: TD3 with its options off (its section's
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

    def update(self, samples: dict[str, Any]) -> dict[str, float]:
        """`ReplayLearnerBase.update`: `update_normalized` on `qpg_minibatch(samples)`."""
        return self.update_normalized(qpg_minibatch(samples, self.model))

    def step(self, name: str, loss: Tensor, params: list[Tensor]) -> bool:
        """`optimizer_step` of this learner."""
        return optimizer_step(self, name, loss, params)

    def update_normalized(self, batch: dict[str, Any]) -> dict[str, float]:
        """One update on a `qpg_minibatch`; returns critic_loss, q_mean and, on an actor step,
        actor_loss."""
        actor, m = self.model, self.learner_modules
        critic, critic_target, actor_target = m["critic"], m["critic_target"], m["actor_target"]
        smoothing, delay, sigma, clip = self.qpg.td3_options()
        obs, actions = batch["obs"], batch["actions"]
        with torch.no_grad():
            next_a = actor_target(batch["next_obs"]).actions
            if smoothing:
                noise = torch.randn(next_a.shape, generator=self.generator).to(next_a.device)
                next_a = td3_smoothed_actions(next_a, sigma, clip, noise=noise)
            next_q = q_values(critic_target, batch["next_obs"], next_a)
            if len(next_q) == 2:
                y = clipped_double_q_target(batch["returns"], batch["discounts"], next_q[0], next_q[1])
            else:
                y = ddpg_critic_target(batch["returns"], batch["discounts"], next_q[0])
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


TD3_DEFAULTS = {**QPG_DEFAULTS, "learning_rate": 1e-3}

TD3 = qpg_algorithm(
    "TD3",
    "twin delayed DDPG (Fujimoto et al. 2018): clipped double Q, target smoothing, delayed actor",
    td3_learner,
    td3_parts,
    TD3Params,
    TD3_DEFAULTS,
)
