"""Checks of a resolved config, run once before any process or env starts."""

from __future__ import annotations

import logging
from typing import Any

from surge.cfg.config import env_frameskip
from surge.errors import ConfigError

log = logging.getLogger("surge")

_POSITIVE_INTS = (
    "rollout",
    "recurrence",
    "batch_size",
    "num_batches_per_iteration",
    "ppo_epochs",
    "num_workers",
    "num_envs_per_worker",
    "worker_num_splits",
    "num_policies",
    "policy_workers_per_policy",
    "min_traj_buffers_per_worker",
    "hidden_size",
    "rnn_num_layers",
    "keep_checkpoints",
    "sample_env_frames",
)


#: Sample Factory parameters accepted so its command lines run, with no effect in surge (yet)
NO_EFFECT = {
    "actor_worker_gpus": ([], "rollout workers do not render on GPUs"),
    "learner_main_loop_num_cores": (1, "the learner uses --num_torch_threads threads"),
}


def validate_cfg(cfg: Any) -> None:
    """Raises `ConfigError` naming the first invalid field and how to fix it; warns about accepted
    Sample Factory parameters that have no effect here."""
    for name, (default, why) in NO_EFFECT.items():
        if getattr(cfg, name, default) != default:
            log.warning("--%s has no effect in surge (%s)", name, why)
    for name in _POSITIVE_INTS:
        v = getattr(cfg, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(
                name, f"must be a positive integer, got {v!r}.", f"pass --{name}=N with N >= 1."
            )
    if cfg.num_envs_per_worker % cfg.worker_num_splits:
        raise ConfigError(
            "num_envs_per_worker",
            f"{cfg.num_envs_per_worker} envs cannot be split evenly into worker_num_splits={cfg.worker_num_splits} groups.",
            f"use a multiple of {cfg.worker_num_splits} (e.g. --num_envs_per_worker="
            f"{cfg.worker_num_splits * max(1, round(cfg.num_envs_per_worker / cfg.worker_num_splits))}) "
            "or --worker_num_splits=1.",
        )
    _check_accumulation(cfg)
    eval_skip = cfg.eval_env_frameskip
    if eval_skip is not None and (eval_skip < 1 or env_frameskip(cfg) % eval_skip):
        raise ConfigError(
            "eval_env_frameskip",
            f"must be a positive divisor of env_frameskip={env_frameskip(cfg)}, got {eval_skip}.",
            "pass --eval_env_frameskip=1 (every frame) or leave it unset (the training frameskip).",
        )
    if cfg.rollout % cfg.recurrence:
        raise ConfigError(
            "rollout",
            f"rollout={cfg.rollout} is not a multiple of recurrence={cfg.recurrence}.",
            f"set --recurrence to a divisor of {cfg.rollout} (e.g. --recurrence={cfg.rollout}).",
        )
    if cfg.with_vtrace and cfg.recurrence != cfg.rollout:
        raise ConfigError(
            "recurrence",
            f"V-trace needs whole trajectories: recurrence={cfg.recurrence} != rollout={cfg.rollout}.",
            f"pass --recurrence={cfg.rollout}, or --with_vtrace=False to use GAE.",
        )
    unit = cfg.rollout if cfg.with_vtrace else cfg.recurrence
    if cfg.batch_size % unit:
        raise ConfigError(
            "batch_size",
            f"batch_size={cfg.batch_size} samples is not a whole number of "
            f"{'trajectories' if cfg.with_vtrace else 'BPTT chunks'} of {unit} steps.",
            f"use a multiple of {unit}.",
        )
    if not 0.0 < cfg.gamma <= 1.0:
        raise ConfigError("gamma", f"discount must be in (0, 1], got {cfg.gamma}.", "e.g. --gamma=0.99.")
    if not 0.0 <= cfg.gae_lambda <= 1.0:
        raise ConfigError(
            "gae_lambda", f"must be in [0, 1], got {cfg.gae_lambda}.", "e.g. --gae_lambda=0.95."
        )
    for name in ("learning_rate", "ppo_clip_ratio", "ppo_clip_value", "adam_eps", "reward_clip"):
        if getattr(cfg, name) <= 0:
            raise ConfigError(name, f"must be > 0, got {getattr(cfg, name)}.", "")
    if cfg.num_policies != 1:
        raise ConfigError(
            "num_policies",
            "training several policies lands with population-based training.",
            "use --num_policies=1 for now.",
        )
    if cfg.with_pbt:
        raise ConfigError(
            "with_pbt", "population-based training is not available yet.", "use --with_pbt=False."
        )
    if cfg.with_wandb:
        import importlib.util

        if importlib.util.find_spec("wandb") is None:
            raise ConfigError(
                "with_wandb",
                "Weights & Biases is not installed.",
                "pip install wandb, or --with_wandb=False.",
            )
    if cfg.device == "gpu":
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("device", "no CUDA device is available to this process.", "pass --device=cpu.")
    if cfg.train_for_env_steps < 0 or cfg.train_for_seconds < 0:
        raise ConfigError("train_for_env_steps", "budgets must be >= 0.", "")


def _check_accumulation(cfg: Any) -> None:
    """The back-pressure limit: the seed's `num_minibatches_to_accumulate` (>= -1) or Sample Factory
    2's `num_batches_to_accumulate` (>= 0 iterations), not both with different values."""
    mini, iters = cfg.num_minibatches_to_accumulate, cfg.num_batches_to_accumulate
    if mini < -1:
        raise ConfigError(
            "num_minibatches_to_accumulate",
            f"must be >= -1, got {mini}.",
            "pass -1 (two iterations' worth), 0 (synchronous PPO) or a number of minibatches.",
        )
    if iters is None:
        return
    if iters < 0:
        raise ConfigError(
            "num_batches_to_accumulate",
            f"must be >= 0 training iterations, got {iters}.",
            "pass 0 (synchronous PPO) or N >= 1, e.g. --num_batches_to_accumulate=2.",
        )
    if mini != -1 and mini != iters * cfg.num_batches_per_iteration:
        raise ConfigError(
            "num_batches_to_accumulate",
            f"{iters} iterations x num_batches_per_iteration={cfg.num_batches_per_iteration} disagrees "
            f"with num_minibatches_to_accumulate={mini}.",
            "pass only one of --num_batches_to_accumulate (Sample Factory 2, iterations) and "
            "--num_minibatches_to_accumulate (minibatches).",
        )
