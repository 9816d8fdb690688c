"""A2C: synchronous advantage actor-critic (Mnih et al. 2016, "Asynchronous Methods for Deep
Reinforcement Learning", Algorithm S3, in its synchronous form; rlpyt's `A2C`, seed 002).

One gradient step per collection round, as rlpyt's A2C takes one per sampler batch
(`batch_T x batch_B`): the batch is one rollout of every agent of every worker
(`a2c_batch_trajectories`; `batch_size` is not A2C's parameter), and the samplers wait while the
learner trains on it (`num_minibatches_to_accumulate=0`), so every sample is trained on by the
policy version that collected it (policy lag 0 with one policy). The policy-gradient estimate
needs that: `E_{a~pi}[grad log pi(a|s)] = 0` makes the baseline and any offset of the advantages
vanish only for actions drawn from the policy being differentiated. With several steps per round
(PPO's minibatch split of `batch_size=128` with 2 x 8 CartPole envs of rollout 32: four steps,
policy lag 0-3) the samples of the later steps come from an older policy, with no importance
correction, and the CartPole-v1 run (normalize_returns=True) went from 500 to 9 (docs/logs/a2c_stability_2026-11-24.md).
No ratio clipping and no epochs. Returns are
n-step (bootstrapped with the critic's value of the observation after the rollout) or GAE when
`gae_lambda` < 1 (Schulman et al. 2016); a truncated episode is bootstrapped with the value of its
last state. Loss per sample (valid samples only, mean):

    -log pi(a|s) * A  +  value_loss_coeff * 0.5 * (V(s) - R)^2  -  exploration_loss_coeff * H(pi(.|s))

Defaults as rlpyt's A2C: Adam, lr 1e-3, gamma 0.99, gae_lambda 1 (n-step returns), value loss
coefficient 0.5, entropy coefficient 0.01, gradient norm clipped to 1, no advantage normalisation;
synchronous sampling. The same module runs in both placements. Unlike rlpyt's, the critic learns
returns normalised by their running mean and std (`normalize_returns=True`; advantages stay in
return units) with PopArt's output-preserving rescale of the value head (`--popart`, van Hasselt
et al. 2016; `surge.learning.popart`). Adam moves each weight by about the learning rate per step
whatever the gradient's scale, so a critic whose targets are raw returns (up to 1/(1-gamma) = 100
on CartPole-v1) needed ~1M frames to reach them, and meanwhile every advantage carried the
critic's offset (+3 to +11 on average), noise that drove the policy off its plateau. Normalised
targets alone fixed that with 32-step rollouts but learned slower than raw returns with 8-step
ones, where the moving statistics shift every bootstrapped target; PopArt keeps the critic's values
in place when the statistics move (docs/logs/a2c_stability_2026-11-25.md).

The critic has its own encoder and core by default (`actor_critic_share_weights=False`, as
Stable-Baselines3's A2C `MlpPolicy` and rlpyt's MuJoCo models). With raw returns as targets, on
CartPole-v1 the value term's gradient on a shared encoder was 660x the policy term's at the
start and 7-140x later (`benchmarks/a2c_gradient_parts.py`), and Adam scales each weight's step by
that weight's own gradient history, so the shared layers followed the critic alone and the policy
learned only through its last layer: 275 at 2M frames with a shared encoder; with separate ones the
mean return first reached 475 at 97k (seed 1) and 489k (seed 2) frames, then dipped below it (the
lagging critic above; docs/logs/a2c_stability_2026-11-24_critic.md).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from torch import Tensor, nn

from surge.algorithms.a2c.learner import A2CLearner
from surge.algorithms.a2c.params import A2CParams
from surge.cfg.config import Config, minibatches_to_accumulate
from surge.cfg.policy_roles import learning_policies
from surge.errors import ConfigError
from surge.learning.algorithm import ActContext, Algorithm, Capabilities, FieldSpec, Obs, register_algorithm
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


def a2c_batch_trajectories(cfg: Config, agents_per_env: int) -> int:
    """Trajectories of one A2C batch: one rollout of every agent, `num_workers x
    num_envs_per_worker x agents_per_env` (a batched env's sub-envs count as agents), i.e.
    `rollout` times as many samples; with several learning policies each learner's share of it
    (their batches then mix rounds: the lag is not 0 by construction there)."""

    learners = max(1, len(learning_policies(cfg)))
    return max(1, cfg.num_workers * cfg.num_envs_per_worker * agents_per_env // learners)


def validate_a2c(cfg: Config) -> None:
    """Raises `ConfigError` for settings A2C cannot honour: another exploration loss than the
    entropy, several minibatches per iteration, or collection going on while the learner trains
    (`num_minibatches_to_accumulate` / `num_batches_to_accumulate` other than 0: the samples of a
    batch would come from older policies), or its flags out of range
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
            "A2C takes one gradient step per round of rollouts.",
            "leave it at 1: A2C's batch is one rollout of every env (num_workers x num_envs_per_worker "
            "x rollout samples).",
        )
    if minibatches_to_accumulate(cfg) != 0:
        raise ConfigError(
            "num_minibatches_to_accumulate",
            "A2C is synchronous: collection waits while the learner trains, so that each batch is "
            "trained on by the policy that collected it (policy lag 0).",
            "leave num_minibatches_to_accumulate at 0 and num_batches_to_accumulate unset (or 0).",
        )


def shared_encoder_for_images(defaults: dict[str, Any]) -> bool:
    """A2C's default of `actor_critic_share_weights`, from the defaults chosen so far: shared for
    a conv encoder (rlpyt's Atari model), separate otherwise (see the module docstring)."""
    return defaults.get("encoder_type") == "conv"


A2C = register_algorithm(
    Algorithm(
        name="A2C",
        description="synchronous advantage actor-critic (rlpyt's A2C): one gradient step per round of rollouts",
        step_fields=a2c_fields,
        act=a2c_act,
        make_learner=A2CLearner,
        default_overrides={
            "learning_rate": 1e-3,
            "gae_lambda": 1.0,
            "exploration_loss_coeff": 0.01,
            "max_grad_norm": 1.0,
            "normalize_advantage": False,
            # the critic learns normalised returns, with PopArt (A2CParams.popart): with raw ones
            # (~100 on CartPole-v1) it lagged its targets for ~1M frames and the policy drifted off
            # its 500 plateau (docs/logs/a2c_stability_2026-11-25.md; rlpyt's A2C has none, and an
            # earlier shared-encoder A2C collapsed with plain normalisation: docs/logs/a2c_2026-11-24.md)
            "normalize_returns": True,
            # the critic gets its own encoder (SB3's A2C MlpPolicy, rlpyt's MuJoCo models): with a
            # shared one, the value term's gradient (raw returns, up to 100 on CartPole) was 7-660x
            # the policy term's on the shared layers, which Adam's per-weight step then follows
            # (docs/logs/a2c_stability_2026-11-24_critic.md)
            # (vector observations); image encoders stay shared, as rlpyt's Atari A2C model: two
            # conv encoders would double the cost of every step
            "actor_critic_share_weights": shared_encoder_for_images,
            "num_minibatches_to_accumulate": 0,
            # one gradient step per batch (validate_a2c), also where an env family or the env's
            # spaces choose several minibatches per iteration for PPO
            "num_batches_per_iteration": 1,
        },
        validate=validate_a2c,
        params=A2CParams,
        batch_trajectories=a2c_batch_trajectories,
        capabilities=Capabilities(
            data_parallel=True,
            exportable=True,
            rescale_actions=True,
            carry_rnn_over_done=True,
            prev_action_reward=True,
            graphed_act=True,
            synchronous=True,  # one gradient step per round of rollouts, policy lag 0
        ),
        unused_params=(
            "batch_size",  # the batch is one rollout of every env (a2c_batch_trajectories)
            "ppo_epochs",
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
