"""A tiny replay algorithm on `ReplayLearnerBase` for its tests (not one to train with):
`--algo=tests.replay_tiny_algo:TINY_REPLAY`. Its acting module is a linear Q-function, act is
greedy, and `update` takes one Adam step of the squared n-step TD error (no target network), weighted
by the importance weights, and writes the TD errors for prioritized replay."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.cfg.config import Config, algo_params, param
from surge.learning.algorithm import ActContext, Algorithm, Feed, ModelParts, register_algorithm
from surge.learning.pg_checks import POLICY_GRADIENT_PARAMS
from surge.learning.replay_learner import ReplayLearnerBase, ReplayParams
from surge.replay.samples import TransitionSample


@dataclass
class TinyParams(ReplayParams):
    tiny_hidden: int = param(8, "Hidden units (unused by the linear Q; shows a subclass's own flag).")


class LinearQ(nn.Module):
    rnn_state_size = 0

    def __init__(self, obs_dim: int, num_actions: int):
        super().__init__()
        self.q = nn.Linear(obs_dim, num_actions)

    def forward(self, obs: Tensor) -> Tensor:
        return self.q(obs.float())


def make_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    algo_params(cfg, TinyParams)
    assert obs_space.shape is not None and isinstance(action_space, gym.spaces.Discrete)
    return ModelParts(LinearQ(int(obs_space.shape[0]), int(action_space.n)))


def act(model: nn.Module, obs: Any, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    return {"actions": model(obs).argmax(-1), "rnn_states": rnn_states}


class TinyLearner(ReplayLearnerBase):
    params_type = TinyParams

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.batches: list[TransitionSample] = []  # every sample `update` saw (the tests read them)

    def update(self, samples: TransitionSample) -> dict[str, float]:
        self.batches.append(samples)
        q = self.model(samples.obs).gather(1, samples.actions.long()[:, None])[:, 0]
        with torch.no_grad():
            target = samples.returns + samples.discounts * self.model(samples.next_obs).max(1).values
        td = target - q
        loss = (samples.is_weights * td**2).mean()
        self.apply_gradients(loss)
        samples.td_errors = td.detach()
        return {"loss": float(loss.detach())}


TINY_REPLAY = register_algorithm(
    Algorithm(
        name="TINY_REPLAY",
        description="test double on ReplayLearnerBase",
        step_fields=lambda action_space: [],
        act=act,
        make_learner=TinyLearner,
        make_model=make_parts,
        feed=Feed.REPLAY,
        params=TinyParams,
        unused_params=POLICY_GRADIENT_PARAMS,
        default_overrides={"batch_size": 16, "learning_rate": 1e-3},
    )
)
