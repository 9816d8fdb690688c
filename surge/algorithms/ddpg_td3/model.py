"""TD3 and DDPG's networks: the acting module and the learner-only modules (`Algorithm.make_model`)."""

from __future__ import annotations

import copy

import gymnasium as gym
from torch import nn

from surge.algorithms.ddpg_td3.params import DDPGParams, DeterministicPGParams, TD3Params
from surge.cfg.config import Config, algo_params
from surge.learning.algorithm import ModelParts
from surge.learning.qpg_common import (
    make_actor,
)
from surge.models.continuous_networks import QCritic, TwinQCritic


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


def ddpg_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    """`Algorithm.make_model` of DDPG: the actor acts; one critic and both targets are the learner's."""
    algo_params(cfg, DDPGParams)
    return deterministic_parts(cfg, obs_space, action_space, twin=False)
