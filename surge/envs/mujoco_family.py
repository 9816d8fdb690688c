"""MuJoCo locomotion through gymnasium (`mujoco_halfcheetah` is `HalfCheetah-v5`), with float32
observations and the defaults of Sample Factory 2's MuJoCo example (MLP 64-64 tanh, no RNN, GAE,
2 epochs x 4 minibatches of 1024, clip 0.2, fixed KL penalty 0.1, input normalisation)."""

from __future__ import annotations

import difflib
from typing import Any

import gymnasium as gym
import numpy as np

from surge.cfg.config import Config
from surge.envs.registry import register_env_family
from surge.errors import ConfigError

MUJOCO_ENVS = {
    "halfcheetah": "HalfCheetah-v5",
    "hopper": "Hopper-v5",
    "walker": "Walker2d-v5",
    "ant": "Ant-v5",
    "humanoid": "Humanoid-v5",
    "swimmer": "Swimmer-v5",
    "reacher": "Reacher-v5",
    "pusher": "Pusher-v5",
    "inverteddoublependulum": "InvertedDoublePendulum-v5",
    "invertedpendulum": "InvertedPendulum-v5",
}

MUJOCO_DEFAULTS = {
    "encoder_type": "mlp",
    "encoder_subtype": "mlp",
    "encoder_mlp_layers": [64, 64],
    "nonlinearity": "tanh",
    "use_rnn": False,
    "recurrence": 1,
    "with_vtrace": False,
    "rollout": 64,
    "batch_size": 1024,
    "num_batches_per_iteration": 4,
    "ppo_epochs": 2,
    "num_envs_per_worker": 8,
    "worker_num_splits": 2,
    "ppo_clip_ratio": 0.2,
    "value_loss_coeff": 1.3,
    "exploration_loss_coeff": 0.0,
    "kl_loss_coeff": 0.1,
    "learning_rate": 0.00295,
    "lr_schedule": "linear_decay",
    "max_grad_norm": 3.5,
    "adaptive_stddev": False,
    "normalize_input": True,
    "gamma": 0.99,
    "gae_lambda": 0.95,
}


def check_mujoco_name(full_env_name: str) -> str:
    """The short name of `mujoco_<name>` (`halfcheetah`).

    Raises:
        ConfigError: not one of `MUJOCO_ENVS` (the closest names are suggested).
    """
    short = full_env_name[len("mujoco_") :]
    if short not in MUJOCO_ENVS:
        close = difflib.get_close_matches(short, list(MUJOCO_ENVS), n=3, cutoff=0.6)
        raise ConfigError(
            "env",
            f"unknown MuJoCo env {full_env_name!r}.",
            (f"did you mean mujoco_{', mujoco_'.join(close)}? " if close else "")
            + f"use one of: mujoco_{', mujoco_'.join(MUJOCO_ENVS)}.",
        )
    return short


def make_mujoco_env(full_env_name: str, cfg: Config, render_mode: str | None = None) -> gym.Env:
    """`mujoco_<name>` -> the gymnasium MuJoCo env with float32 observations.

    Raises:
        ConfigError: unknown name.
    """
    short = check_mujoco_name(full_env_name)
    kwargs: dict[str, Any] = (
        {"render_mode": render_mode} if render_mode is not None else {}
    )  # gym.make's **kwargs
    env = gym.make(MUJOCO_ENVS[short], **kwargs)
    return gym.wrappers.DtypeObservation(env, np.float32)


register_env_family(
    "mujoco_",
    make_mujoco_env,
    default_overrides=MUJOCO_DEFAULTS,
    names=tuple(f"mujoco_{n}" for n in MUJOCO_ENVS),
    check_name=check_mujoco_name,
)
