"""DUMMY_SAMPLER: uniformly random actions through the full sampler and no learning: the env frames
per second of the sampling machinery alone, the ceiling for any algorithm on the machine (Sample
Factory's dummy sampler, `surge bench`)."""

from __future__ import annotations

import gymnasium as gym
from torch import Tensor, nn

from surge.envs.action_masks import MASK_KEY
from surge.learning.algorithm import ActContext, Algorithm, Capabilities, Obs, register_algorithm
from surge.models.distributions import random_actions


def random_act(model: nn.Module, obs: Obs | None, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """Uniformly random actions `[B, *action_shape]` of the model's action space, legal ones when
    obs holds an `action_mask` `[B, num_logits]`; the hidden state is not advanced (width 0 for
    models without an RNN)."""
    mask = obs.get(MASK_KEY) if isinstance(obs, dict) else None
    space: gym.Space = model.action_space  # type: ignore[assignment]
    actions = random_actions(space, len(rnn_states), mask)
    return {"actions": actions, "rnn_states": rnn_states[:, :0]}


DUMMY_SAMPLER = register_algorithm(
    Algorithm(
        name="DUMMY_SAMPLER",
        description="random actions, no learning: measures the sampler's env frames/s",
        step_fields=lambda action_space: [],
        act=random_act,
        make_learner=None,
        act_reads_obs=False,
        capabilities=Capabilities(sampler_only=True),
    )
)
