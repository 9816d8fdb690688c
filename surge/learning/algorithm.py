"""Algorithms as plug-ins: what an algorithm declares, in one place, and the registry `--algo` reads.

An `Algorithm` says
- which per-step fields it stores in the trajectory buffers besides the core ones every sampler
  writes (`step_fields`; the core fields are listed in `surge.data.trajectory`),
- what inference computes and writes for each acting agent (`act`),
- its networks (`make_model` -> `ModelParts`: the acting module inference runs and the
  learner-only modules, critics and target networks, that only the learner builds; default the
  env's actor-critic),
- what `surge enjoy` and evaluation act with (`eval_act`; default `act` with
  `ActContext.deterministic`),
- its learner (`make_learner`; None: the algorithm does not train, like the dummy sampler),
- how experience reaches the learner (`feed`, `surge.learning.feed.Feed`, which also sizes the
  block pool, chooses the batcher and counts the trajectories held for the memory estimate):
  ON_POLICY holds a batch's trajectory blocks until the learner trained on them (back-pressure
  bounds the policy lag); REPLAY copies each block into the learner's replay buffer and releases
  it at once, training at a replay ratio,
- its config section: its own flags (`params`, a dataclass of `param(...)` fields, read with
  `surge.cfg.config.algo_params`), defaults it overrides, validation, and the core parameters it
  does not use (reported in the run's log when they are set),
- optionally, the defaults it chooses by the env's spaces for an env no family claims
  (`space_defaults`; without them the policy-gradient rules of `surge.cfg.space_defaults` apply),
- the memory its replay holds (`replay_bytes(cfg, env_info)`, REPLAY algorithms: added to the
  memory estimate checked before the run starts),
- optionally, its batch in trajectories when the sampling layout decides it rather than
  `batch_size` (`batch_trajectories`: A2C trains on one rollout of every agent),
- the TensorBoard tags of the statistics its learner reports (a statistic without a declared tag is
  still logged, under `train/<name>`),
- what the rest of surge may do with it (`capabilities`: data-parallel, exportable, autocast, the
  KL-adaptive rate, a central value, synchronous learning, sampler-only ...); no code tests an
  algorithm's name.

The placements know none of this: they allocate what `step_fields` lists, call `act` in inference
and `make_learner` in the learner, and route blocks by `feed`. A new algorithm is a module that calls
`register_algorithm` (see `surge.algorithms.a2c.declaration`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.learning import algorithm_registry
from surge.learning.feed import Feed
from surge.models.actor_critic import ActorCritic, make_actor_critic
from surge.models.distributions import num_action_logits

if TYPE_CHECKING:
    from surge.cfg.config import Config

Obs = Tensor | dict[str, Tensor]

# the registry (surge.learning.algorithm_registry, which the feed's batcher reads without
# importing this module), re-exported where every plug-in looks for it
_ALGORITHMS = algorithm_registry._ALGORITHMS
register_algorithm = algorithm_registry.register_algorithm
registered_algorithm = algorithm_registry.registered_algorithm
get_algorithm = algorithm_registry.get_algorithm
algorithm_names = algorithm_registry.algorithm_names
algorithm_spec = algorithm_registry.algorithm_spec


@dataclass(frozen=True)
class FieldSpec:
    """One per-step field of the trajectory buffers, stored as `[num_slots, T, *shape]` of `dtype`
    and filled with `fill` until written (NaN makes a read of a never-written float visible)."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32
    fill: float = math.nan


@dataclass(frozen=True)
class ActContext:
    """What an `act` knows besides observations and hidden states.

    Attributes:
        actor_ids: `[B]` int64 on the CPU, the stable global index of each acting agent,
            `(worker * num_envs_per_worker + env) * num_agents + agent` (env counted over the
            worker's splits; a batched env's sub-envs are its agents); the same agent keeps its id
            across rollouts, slots and a replaced worker. None where unknown (`surge enjoy`).
            Per-actor exploration (Ape-X / R2D2's eps_i) indexes with it.
        num_actors: acting agents of the whole run (`num_workers * num_envs_per_worker *
            num_agents`); 0 where unknown.
        env_frames: the run's env frames (env steps x frameskip) as inference last knew them
            (for exploration schedules); 0 where unknown.
        deterministic: act greedily / with the distribution's mode (evaluation, `surge enjoy`).
    """

    actor_ids: Tensor | None = None
    num_actors: int = 0
    env_frames: int = 0
    deterministic: bool = False


#: act(acting module, obs `[B, ...]` or None, rnn_states `[B, state]`, ctx) -> {field: `[B, ...]`}
#: holding at least "actions" and "rnn_states" (the state after this step); obs is None when
#: `act_reads_obs` is False (a random policy need not read observations).
ActFn = Callable[[nn.Module, "Obs | None", Tensor, ActContext], dict[str, Tensor]]
#: make_learner(cfg, acting module, buffers, device, policy_id, learner_modules=...) -> a
#: `LearnerBase`; learner_modules is `ModelParts.learner_modules` (passed by keyword)
LearnerFactory = Callable[..., Any]


@runtime_checkable
class ActingModule(Protocol):
    """What the placements read from an algorithm's acting module (`ModelParts.acting`) besides
    being an `nn.Module`: the width of one agent's recurrent state, `rnn_state_size` (0 without an
    RNN; the trajectory buffers store `[slots, T+1, rnn_state_size]` float32 and inference passes
    `[B, rnn_state_size]` to `act`). Everything else it needs travels in its `state_dict`: the
    shared weights publish its floating-point tensors (observation and return normalisers
    included), the checkpoint's "model" is its state."""

    rnn_state_size: int


@dataclass
class ModelParts:
    """The networks of one policy, as `Algorithm.make_model` builds them.

    Attributes:
        acting: what inference runs (`act` gets it) and the shared weights publish; its state is
            the checkpoint's "model". Must follow `ActingModule`.
        learner_modules: learner-only modules by name (critics, target networks): built in the
            learner's process only, trained there, saved in the checkpoint under "learner_modules"
            and restored generically; empty for APPO and A2C.
    """

    acting: nn.Module
    learner_modules: dict[str, nn.Module] = field(default_factory=dict)


def actor_critic_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    """The default `make_model`: the env's actor-critic (`surge.models.actor_critic.make_actor_critic`,
    a model registered for the env name if any) as the acting module, no learner-only modules."""
    return ModelParts(make_actor_critic(cfg, obs_space, action_space))


def acting_state_size(module: nn.Module) -> int:
    """`module.rnn_state_size` (`ActingModule`).

    Raises:
        TypeError: the acting module does not say its recurrent state's width.
    """
    size = getattr(module, "rnn_state_size", None)
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise TypeError(
            f"the acting module {type(module).__name__} must have an int rnn_state_size >= 0 (0 without "
            f"an RNN; surge.learning.algorithm.ActingModule), got {size!r}"
        )
    return size


@dataclass(frozen=True)
class Capabilities:
    """What the rest of surge may do with an algorithm, declared by it (all off by default: a
    user's algorithm gets none it does not state). Read wherever a flag or a feature depends on
    the algorithm, in place of a test of its name.

    Attributes:
        data_parallel: its learner takes every optimizer step through
            `LearnerBase.apply_gradients` with one optimizer (where gradients are all-reduced), so
            it runs under torchrun with several ranks (`surge.runtime.ranks`).
        exportable: its acting module is an `ActorCritic` with `act` (what `surge export` wraps).
        autocast: its learner runs its forward pass under `--mixed_precision` (`surge.learning.amp`).
        kl_adaptive_rate: its learner measures the KL between the behavior and the current policy,
            which `--lr_schedule=kl_adaptive*` adapts the rate to.
        central_value: it trains `--central_value` (an asymmetric critic over the env's state).
        rescale_actions: it acts in [-1, 1] and accepts `--rescale_actions` to map to the bounds.
        carry_rnn_over_done: its learner follows `--zero_rnn_on_done=False` (the recurrent state
            carried over an episode's end, as acting does).
        synchronous: it learns with policy lag 0 (every block held until trained), which a Ray
            sampler node, sampling on while its blocks travel, cannot keep.
        sampler_only: it samples without learning: the run is a benchmark (no checkpoints, nothing
            written in the experiment folder) of at most `--sample_env_frames` env frames.
        prev_action_reward: its model reads the observation's previous action and reward entries
            (`--use_prev_action_reward`, `surge.envs.prev_action_reward`) as features before the core.
        graphed_act: its `act` reads nothing of its `ActContext` but `deterministic`, never waits
            on the device (no `.item()`, no shape that depends on the data) and keeps no Python
            state between calls, so an inference worker on a GPU may replay it from captured
            CUDA graphs (`--cuda_graphs`, `surge.sampling.graphed_act`).
    """

    data_parallel: bool = False
    exportable: bool = False
    autocast: bool = False
    kl_adaptive_rate: bool = False
    central_value: bool = False
    rescale_actions: bool = False
    carry_rnn_over_done: bool = False
    synchronous: bool = False
    sampler_only: bool = False
    prev_action_reward: bool = False
    graphed_act: bool = False


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
    make_model: Callable[[Config, gym.Space, gym.Space], ModelParts] = actor_critic_parts
    eval_act: ActFn | None = None
    params: type | None = None
    replay_bytes: Callable[[Config, Any], int] | None = None
    #: (observation space, action space, values given so far) -> [`SpaceDefault`], the defaults this
    #: algorithm chooses for a plain gymnasium id with these spaces, each with the reason its run
    #: logs; applied over `default_overrides`, below YAML and the command line. `given` holds what
    #: YAML and the flags set of `use_rnn`, `rollout`, `train_for_seconds`, `env_wrappers`. None:
    #: the policy-gradient rules (`surge.cfg.space_defaults.space_defaults`), below
    #: `default_overrides` (`surge.app.space_defaults.chosen_space_defaults`)
    space_defaults: Callable[[gym.Space, gym.Space, dict[str, Any]], list[Any]] | None = None
    #: (cfg, agents per env) -> trajectories per batch, for an algorithm whose batch the sampling
    #: layout fixes (A2C: one rollout of every agent); None: `batch_size` x
    #: `num_batches_per_iteration` / `rollout` (`surge.learning.batcher.traj_per_iteration`)
    batch_trajectories: Callable[[Config, int], int] | None = None
    capabilities: Capabilities = Capabilities()

    @property
    def trains(self) -> bool:
        """Whether it has a learner (`make_learner`)."""
        return self.make_learner is not None

    @property
    def evaluation_act(self) -> ActFn:
        """What `surge enjoy` and evaluation act with: `eval_act`, else `act` (both get an
        `ActContext` whose `deterministic` is the evaluation's choice)."""
        return self.eval_act if self.eval_act is not None else self.act


def sampled_act(model: nn.Module, obs: Obs | None, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """Samples actions from the actor-critic's policy (its mode when `ctx.deterministic`); writes
    what the policy-gradient learners read: behavior log-probs `[B]`, behavior values `[B]` and
    the action-distribution parameters `[B, num_logits]` (used by the KL and symmetric-KL terms)."""
    assert obs is not None  # act_reads_obs
    assert isinstance(model, ActorCritic)
    out = model.act(obs, rnn_states, deterministic=ctx.deterministic)
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
