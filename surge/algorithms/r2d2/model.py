"""R2D2's networks: the acting module and the learner-only modules (`Algorithm.make_model`)."""

from __future__ import annotations

import copy

import gymnasium as gym
from torch import Tensor, nn

from surge.algorithms.dqn.networks import QNetwork
from surge.algorithms.r2d2.params import R2D2Params
from surge.cfg.config import Config, algo_params
from surge.learning.algorithm import ActContext, ModelParts
from surge.learning.exploration import linear_schedule, per_actor_epsilon


class R2D2Actor(nn.Module):
    """The acting module: the online recurrent `QNetwork` (`q`) and the exploration rule (plain
    attributes rebuilt from the config in every process; not in the state)."""

    def __init__(self, q: QNetwork, p: R2D2Params, train_frames: int):
        super().__init__()
        self.q = q
        self.rnn_state_size: int = q.rnn_state_size
        self.eps = linear_schedule(
            p.exploration_initial_eps, p.exploration_final_eps, int(p.exploration_fraction * train_frames)
        )
        self.per_actor = p.per_actor_eps
        self.per_actor_base, self.per_actor_alpha = p.per_actor_eps_base, p.per_actor_eps_alpha

    def epsilon(self, ctx: ActContext) -> float | Tensor:
        """ε for the agents of `ctx`: `[B]` per actor with `--per_actor_eps` (where actor ids are
        known; else the base ε), or the schedule's at `ctx.env_frames`."""
        if self.per_actor:
            if ctx.actor_ids is not None and ctx.num_actors > 0:
                return per_actor_epsilon(
                    ctx.actor_ids, ctx.num_actors, self.per_actor_base, self.per_actor_alpha
                )
            return self.per_actor_base
        return self.eps(ctx.env_frames)


def make_r2d2_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    """`Algorithm.make_model`: the `R2D2Actor` (recurrent QNetwork) acts; its frozen copy is the
    learner's "target".

    Raises:
        EnvError: a non-Discrete action space.
    """
    p = algo_params(cfg, R2D2Params)
    q = QNetwork(cfg, obs_space, action_space, dueling=p.dueling, use_rnn=True)
    target = copy.deepcopy(q).requires_grad_(False)
    return ModelParts(R2D2Actor(q, p, cfg.train_for_env_steps), {"target": target})
