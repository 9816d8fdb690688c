"""APPO: asynchronous PPO with V-trace or GAE (Sample Factory; Schulman et al. 2017, Espeholt et al.
2018), the default `--algo`. Its learner is `surge.algorithms.appo.learner.Learner`, its config section (the PPO and
V-trace flags) `surge.algorithms.appo.config.APPOParams`."""

from __future__ import annotations

from surge.algorithms.appo.config import APPOParams
from surge.algorithms.appo.learner import Learner
from surge.cfg.config import Config, algo_params
from surge.errors import ConfigError
from surge.learning.algorithm import (
    Algorithm,
    Capabilities,
    policy_gradient_fields,
    register_algorithm,
    sampled_act,
)
from surge.learning.central_value import central_value_parts
from surge.learning.pg_checks import check_ppo_flags

#: learner statistic -> TensorBoard tag (docs/metrics.md)
PPO_METRIC_TAGS = {
    "loss": "losses/total",
    "policy_loss": "losses/policy_loss",
    "value_loss": "losses/value_loss",
    "exploration_loss": "losses/exploration_loss",
    "kl_loss": "losses/kl_loss",
    "bounds_loss": "losses/bounds_loss",
    "kl": "policy/kl",
    "entropy": "policy/entropy",
    "approx_kl": "policy/approx_kl",
    "clip_fraction": "policy/clip_fraction",
    "ratio_mean": "policy/ratio_mean",
    "grad_norm": "losses/grad_norm",
    "lr": "train/learning_rate",
    "adv_mean": "train/advantage_mean",
    "value_mean": "train/value_mean",
    "target_mean": "train/value_target_mean",
    "policy_lag_min": "train/policy_lag_min",
    "policy_lag_avg": "train/policy_lag_avg",
    "policy_lag_max": "train/policy_lag_max",
    "policy_version": "train/policy_version",
    "cv_loss": "losses/central_value_loss",
    "cv_grad_norm": "losses/central_value_grad_norm",
    "cv_lr": "train/central_value_learning_rate",
    "cv_value_mean": "train/central_value_mean",
}


def validate_appo(cfg: Config) -> None:
    """APPO's own constraints: its flags' ranges and the batch layout.

    Raises:
        ConfigError: a PPO or V-trace flag out of range (`surge.learning.pg_checks.check_ppo_flags`),
            V-trace without whole trajectories (recurrence != rollout), or a batch that is not a
            whole number of minibatch units (trajectories for V-trace, BPTT chunks for GAE).
    """
    check_ppo_flags(cfg)
    appo = algo_params(cfg, APPOParams)
    if appo.with_vtrace and cfg.normalize_advantage and appo.normalize_advantage_over == "batch":
        raise ConfigError(
            "normalize_advantage_over",
            "batch: V-trace computes the advantages per minibatch, there is no batch of them to normalise.",
            "pass --with_vtrace=False (GAE), or --normalize_advantage_over=minibatch.",
        )
    if appo.obs_normalizer_update == "minibatch" and not cfg.normalize_input:
        raise ConfigError(
            "obs_normalizer_update",
            "minibatch: there is no observation normaliser to update (normalize_input is False).",
            "pass --normalize_input=True, or leave --obs_normalizer_update at batch.",
        )
    if appo.with_vtrace and cfg.recurrence != cfg.rollout:
        raise ConfigError(
            "recurrence",
            f"V-trace needs whole trajectories: recurrence={cfg.recurrence} != rollout={cfg.rollout}.",
            f"pass --recurrence={cfg.rollout}, or --with_vtrace=False to use GAE.",
        )
    unit = cfg.rollout if appo.with_vtrace else cfg.recurrence
    if cfg.batch_size % unit:
        raise ConfigError(
            "batch_size",
            f"batch_size={cfg.batch_size} samples is not a whole number of "
            f"{'trajectories' if appo.with_vtrace else 'BPTT chunks'} of {unit} steps.",
            f"use a multiple of {unit}.",
        )


APPO = register_algorithm(
    Algorithm(
        name="APPO",
        description="asynchronous PPO with V-trace or GAE (Sample Factory)",
        step_fields=policy_gradient_fields,
        act=sampled_act,
        make_learner=Learner,
        validate=validate_appo,
        params=APPOParams,
        metric_tags=PPO_METRIC_TAGS,
        make_model=central_value_parts,
        capabilities=Capabilities(
            data_parallel=True,
            exportable=True,
            autocast=True,
            kl_adaptive_rate=True,
            central_value=True,
            rescale_actions=True,
            carry_rnn_over_done=True,
            prev_action_reward=True,
            graphed_act=True,
        ),
    )
)
