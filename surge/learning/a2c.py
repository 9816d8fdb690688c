"""A2C: synchronous advantage actor-critic (Mnih et al. 2016, "Asynchronous Methods for Deep
Reinforcement Learning", Algorithm S3, in its synchronous form; rlpyt's `A2C`, seed 002).

One gradient step per batch of `batch_size` samples, no ratio clipping and no epochs. Returns are
n-step (bootstrapped with the critic's value of the observation after the rollout) or GAE when
`gae_lambda` < 1 (Schulman et al. 2016); a truncated episode is bootstrapped with the value of its
last state. Loss per sample (valid samples only, mean):

    -log pi(a|s) * A  +  value_loss_coeff * 0.5 * (V(s) - R)^2  -  exploration_loss_coeff * H(pi(.|s))

Defaults as rlpyt's A2C: Adam, lr 1e-3, gamma 0.99, gae_lambda 1 (n-step returns), value loss
coefficient 0.5, entropy coefficient 0.01, gradient norm clipped to 1, no advantage
or return normalisation; synchronous sampling (`num_minibatches_to_accumulate=0`: every sample of a batch
comes from the policy version being trained). The same module runs in both placements.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from torch import Tensor, nn

from surge.cfg.config import Config
from surge.errors import ConfigError
from surge.learning.algorithm import ActContext, Algorithm, FieldSpec, Obs, register_algorithm
from surge.learning.base import LearnerBase
from surge.learning.pg_checks import check_actor_critic_flags
from surge.models.actor_critic import ActorCritic


def a2c_act(model: nn.Module, obs: Obs | None, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """Samples actions `[B, ...]` (the mode when `ctx.deterministic`); stores the behavior values
    `[B]` the returns bootstrap from."""
    assert obs is not None  # act_reads_obs
    assert isinstance(model, ActorCritic)
    out = model.act(obs, rnn_states, deterministic=ctx.deterministic)
    return {"actions": out.actions, "values": out.values, "rnn_states": out.rnn_states}


def a2c_fields(action_space: gym.Space) -> list[FieldSpec]:
    """A2C stores only the behavior values `[T]` float32 besides the core fields."""
    return [FieldSpec("values", ())]


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
    """The A2C loss (module docstring) over samples; every argument `[N]` float32, `valids` 1 for
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


class A2CLearner(LearnerBase):
    """One gradient step of `a2c_loss` per batch (see the module docstring)."""

    def prepare_batch(self, slots: Tensor) -> dict[str, Any]:
        b = super().prepare_batch(slots)
        b["old_values"] = b.pop("values")
        return b

    def train_batch(self, b: dict[str, Any], env_frames: int = 0) -> dict[str, float]:
        """Trains one step on a batch from `prepare_batch`; returns the loss parts, grad_norm, lr,
        policy_lag_min/avg/max (policy versions) and skipped_updates (1 when the step was skipped for
        a non-finite loss or gradient, see `LearnerBase.apply_gradients`)."""
        cfg, model = self.cfg, self.model
        lr = self.set_learning_rate(env_frames)
        self._mask_stale(b)
        self._update_obs_normalizer(b)
        T = b["rewards"].shape[0]
        adv, targets = self._gae_targets(b)  # gae_lambda = 1: n-step returns, bootstrapped
        obs = {k: v[:T] for k, v in b["obs"].items()} if isinstance(b["obs"], dict) else b["obs"][:T]
        logits, values = model.evaluate(obs, b["rnn_states"][:T], b["dones"], cfg.recurrence)
        valids = b["valids"]
        if cfg.normalize_advantage:
            adv = self.normalize_advantages(adv, valids)
        dist = model.distribution(logits.reshape(-1, logits.shape[-1]))
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
        loss, stats = a2c_loss(
            dist.log_prob(flat(b["actions"])),
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


def validate_a2c(cfg: Config) -> None:
    """Raises `ConfigError` for settings A2C cannot honour, or for its flags out of range
    (`surge.learning.pg_checks.check_actor_critic_flags`)."""
    check_actor_critic_flags(cfg)
    if cfg.exploration_loss != "entropy":
        raise ConfigError(
            "exploration_loss",
            "A2C's exploration term is the entropy bonus.",
            "pass --exploration_loss=entropy.",
        )
    if cfg.num_batches_per_iteration != 1:
        raise ConfigError(
            "num_batches_per_iteration",
            "A2C takes one gradient step per batch of batch_size samples.",
            "leave it at 1 and set --batch_size to the samples per step.",
        )


A2C = register_algorithm(
    Algorithm(
        name="A2C",
        description="synchronous advantage actor-critic (rlpyt's A2C)",
        step_fields=a2c_fields,
        act=a2c_act,
        make_learner=A2CLearner,
        default_overrides={
            "learning_rate": 1e-3,
            "gae_lambda": 1.0,
            "exploration_loss_coeff": 0.01,
            "max_grad_norm": 1.0,
            "normalize_advantage": False,
            # rlpyt's A2C has no value normalisation; with the vector-obs default (True) the
            # deterministic CartPole policy collapsed in 5 of 8 seeds (docs/logs/a2c_2026-11-24.md)
            "normalize_returns": False,
            "num_minibatches_to_accumulate": 0,
            # one gradient step per batch (validate_a2c), also where an env family or the env's
            # spaces choose several minibatches per iteration for PPO
            "num_batches_per_iteration": 1,
        },
        validate=validate_a2c,
        unused_params=(
            "ppo_clip_ratio",
            "ppo_clip_value",
            "ppo_epochs",
            "with_vtrace",
            "vtrace_rho",
            "vtrace_c",
            "kl_loss_coeff",
        ),
        metric_tags={
            "loss": "losses/total",
            "policy_loss": "losses/policy_loss",
            "value_loss": "losses/value_loss",
            "exploration_loss": "losses/exploration_loss",
            "entropy": "policy/entropy",
            "grad_norm": "losses/grad_norm",
            "lr": "train/learning_rate",
            "valid_fraction": "train/valid_fraction",
            "policy_lag_avg": "train/policy_lag_avg",
            "policy_version": "train/policy_version",
        },
    )
)
