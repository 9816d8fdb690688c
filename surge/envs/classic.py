"""Gymnasium classic control (CartPole, Acrobot, MountainCar, Pendulum) under short names.

`--env=cartpole` is `CartPole-v1`; the full gymnasium ids work as well (they need no family).
Vector observations get the MLP encoder and no RNN by default.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from surge.cfg.config import Config
from surge.envs.registry import register_env_family

CLASSIC_ENVS = {
    "cartpole": "CartPole-v1",
    "acrobot": "Acrobot-v1",
    "mountaincar": "MountainCar-v0",
    "mountaincar_continuous": "MountainCarContinuous-v0",
    "pendulum": "Pendulum-v1",
}

#: defaults for small vector-observation control tasks: an MLP without RNN, PPO with GAE and
#: CleanRL-like epochs and minibatches; reward_scale 0.1 keeps value targets near 1-50 so the
#: value loss does not swamp the clipped gradient (CartPole-v1 reaches 500 in ~130k frames).
VECTOR_OBS_DEFAULTS = {
    "encoder_type": "mlp",
    "encoder_subtype": "mlp",
    "encoder_mlp_layers": [64, 64],
    "use_rnn": False,
    "recurrence": 1,
    "nonlinearity": "tanh",
    "with_vtrace": False,
    "num_envs_per_worker": 8,
    "batch_size": 128,
    "num_batches_per_iteration": 4,
    "ppo_epochs": 4,
    "learning_rate": 3e-4,
    "max_grad_norm": 0.5,
    "reward_scale": 0.1,
    "exploration_loss_coeff": 0.01,
}


def make_classic_env(full_env_name: str, cfg: Config, render_mode: str | None = None) -> gym.Env:
    """Makes a classic-control env from its short name (`cartpole`)."""
    kwargs: dict[str, Any] = (
        {"render_mode": render_mode} if render_mode is not None else {}
    )  # gym.make's **kwargs
    return gym.make(CLASSIC_ENVS[full_env_name], **kwargs)


for _name in CLASSIC_ENVS:
    register_env_family(
        _name, make_classic_env, default_overrides=VECTOR_OBS_DEFAULTS, names=(_name,), exact=True
    )
