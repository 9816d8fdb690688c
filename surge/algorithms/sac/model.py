"""SAC's networks: the acting module and the learner-only modules (`Algorithm.make_model`)."""

from __future__ import annotations

import copy
import math

import gymnasium as gym
import torch
from torch import nn

from surge.algorithms.sac.params import SACParams, parse_ent_coef
from surge.cfg.config import Config, algo_params
from surge.learning.algorithm import ModelParts
from surge.learning.qpg_common import (
    make_actor,
)
from surge.models.continuous_networks import TwinQCritic


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
            "log_alpha": LogAlpha(parse_ent_coef(p.ent_coef)[1]),
        },
    )
