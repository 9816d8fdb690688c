"""Algorithms as plug-ins: what an algorithm declares, in one place, and the registry `--algo` reads.

An `Algorithm` says
- which per-step fields it stores in the trajectory buffers besides the core ones every sampler
  writes (`step_fields`; the core fields are listed in `surge.data.trajectory`),
- what inference computes and writes for each acting agent (`act`),
- its learner (`make_learner`; None: the algorithm does not train, like the dummy sampler),
- how experience reaches the learner (`feed`): ON_POLICY holds a batch's trajectory blocks until the
  learner trained on them (back-pressure bounds the policy lag); REPLAY copies each block into the
  learner's replay buffer and releases it at once, training at a replay ratio,
- its config section: defaults it overrides, validation, and the core parameters it does not use
  (reported in the run's log when they are set),
- optionally, its batch in trajectories when the sampling layout decides it rather than
  `batch_size` (`batch_trajectories`: A2C trains on one rollout of every agent),
- the TensorBoard tags of the statistics its learner reports (a statistic without a declared tag is
  still logged, under `train/<name>`).

The placements know none of this: they allocate what `step_fields` lists, call `act` in inference
and `make_learner` in the learner, and route blocks by `feed`. A new algorithm is a module that calls
`register_algorithm` (see `surge.learning.a2c`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import torch
from torch import Tensor

from surge.errors import ConfigError
from surge.models.actor_critic import ActorCritic
from surge.models.distributions import num_action_logits

if TYPE_CHECKING:
    from surge.cfg.config import Config
    from surge.data.trajectory import TrajectoryBuffers

Obs = Tensor | dict[str, Tensor]


class Feed(enum.Enum):
    """How finished trajectory blocks reach the learner (see the module docstring)."""

    ON_POLICY = "on_policy"
    REPLAY = "replay"


@dataclass(frozen=True)
class FieldSpec:
    """One per-step field of the trajectory buffers, stored as `[num_slots, T, *shape]` of `dtype`
    and filled with `fill` until written (NaN makes a read of a never-written float visible)."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32
    fill: float = math.nan


#: act(model, obs `[B, ...]` or None, rnn_states `[B, state]`) -> {field: `[B, ...]`} holding at
#: least "actions" and "rnn_states" (the state after this step); obs is None when `act_reads_obs`
#: is False (a random policy need not read observations).
ActFn = Callable[["ActorCritic", "Obs | None", Tensor], dict[str, Tensor]]
LearnerFactory = Callable[["Config", "ActorCritic", "TrajectoryBuffers", torch.device, int], Any]


@dataclass(frozen=True)
class Algorithm:
    """An algorithm's declaration; see the module docstring for each part."""

    name: str
    description: str
    step_fields: Callable[[gym.Space], list[FieldSpec]]
    act: ActFn
    make_learner: LearnerFactory | None
    feed: Feed = Feed.ON_POLICY
    act_reads_obs: bool = True
    default_overrides: dict[str, Any] = field(default_factory=dict)
    validate: Callable[[Config], None] = lambda cfg: None
    unused_params: tuple[str, ...] = ()
    metric_tags: dict[str, str] = field(default_factory=dict)
    #: (cfg, agents per env) -> trajectories per batch, for an algorithm whose batch the sampling
    #: layout fixes (A2C: one rollout of every agent); None: `batch_size` x
    #: `num_batches_per_iteration` / `rollout` (`surge.learning.batcher.traj_per_iteration`)
    batch_trajectories: Callable[[Config, int], int] | None = None

    @property
    def trains(self) -> bool:
        return self.make_learner is not None


_ALGORITHMS: dict[str, Algorithm] = {}
_BUILTINS_LOADED = False


def register_algorithm(algo: Algorithm) -> Algorithm:
    """Registers (or replaces) `algo` under `algo.name`, the value of `--algo`."""
    _ALGORITHMS[algo.name] = algo
    return algo


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        from surge.learning import a2c, appo, dummy_sampler  # noqa: F401  (they register themselves)


def algorithm_names() -> list[str]:
    """Names of every registered algorithm."""
    _load_builtins()
    return sorted(_ALGORITHMS)


def get_algorithm(name: str) -> Algorithm:
    """The algorithm registered as `name`.

    Raises:
        ConfigError: no algorithm of that name (the message lists the registered ones).
    """
    _load_builtins()
    if name not in _ALGORITHMS:
        raise ConfigError(
            "algo", f"unknown algorithm {name!r}.", f"use one of {', '.join(algorithm_names())}."
        )
    return _ALGORITHMS[name]


# --- pieces several algorithms share -------------------------------------------------------------
def sampled_act(model: ActorCritic, obs: Obs | None, rnn_states: Tensor) -> dict[str, Tensor]:
    """Samples actions from the model's policy; writes what the policy-gradient learners read:
    behavior log-probs `[B]`, behavior values `[B]` and the action-distribution parameters
    `[B, num_logits]` (used by the KL and symmetric-KL terms)."""
    assert obs is not None  # act_reads_obs
    out = model.act(obs, rnn_states)
    return {
        "actions": out.actions,
        "behavior_log_probs": out.log_probs,
        "values": out.values,
        "action_logits": out.logits,
        "rnn_states": out.rnn_states,
    }


def policy_gradient_fields(action_space: gym.Space) -> list[FieldSpec]:
    """The fields `sampled_act` writes: behavior_log_probs `[T]`, values `[T]`, action_logits
    `[T, num_logits]`, all float32."""
    return [
        FieldSpec("behavior_log_probs", ()),
        FieldSpec("values", ()),
        FieldSpec("action_logits", (num_action_logits(action_space),)),
    ]
