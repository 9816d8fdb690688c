"""A minimal replay algorithm for testing the REPLAY feed (not an algorithm to train with): its
learner keeps every observed transition's observation and reward and, once per observed block
(replay ratio 1), takes one Adam step of the critic towards the rewards of a random minibatch."""

from __future__ import annotations

from typing import Any

import torch

from surge.learning.algorithm import Algorithm, Feed, FieldSpec, register_algorithm
from surge.learning.base import LearnerBase


def _act(model, obs, rnn_states, ctx):
    out = model.act(obs, rnn_states)
    return {"actions": out.actions, "rnn_states": out.rnn_states}


class ReplayLearner(LearnerBase):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.obs: list[torch.Tensor] = []
        self.rewards: list[torch.Tensor] = []
        self.observed_blocks = 0

    def observe(self, b: dict[str, Any]) -> None:
        T = b["rewards"].shape[0]
        self.obs.append(b["obs"][:T].reshape(-1, *b["obs"].shape[2:]).clone())
        self.rewards.append(b["rewards"].reshape(-1).clone())
        self.observed_blocks += 1

    def train_replay(self, env_frames: int = 0) -> dict[str, float] | None:
        obs, rewards = torch.cat(self.obs), torch.cat(self.rewards)
        idx = torch.randint(len(rewards), (32,))
        _, values = self.model.evaluate(obs[idx][None], torch.zeros(1, 32, 0), torch.zeros(1, 32), 1)
        loss = ((values[0] - rewards[idx]) ** 2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.policy_version += 1
        return {"value_loss": float(loss.detach()), "replay_size": float(len(rewards))}


TEST_REPLAY = register_algorithm(
    Algorithm(
        name="TEST_REPLAY",
        description="test double of a replay algorithm",
        step_fields=lambda action_space: [FieldSpec("values", ())],
        act=_act,
        make_learner=ReplayLearner,
        feed=Feed.REPLAY,
    )
)
