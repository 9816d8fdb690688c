"""The actor-critic: encoder -> core (GRU/LSTM/none) -> policy logits and value.

With `--actor_critic_share_weights=False` the critic has its own encoder and core (rl_games'
`separate: True`): the stored RNN state is then `[actor's, critic's]` concatenated, and `act` and
`evaluate` split it. Two entry points, one set of weights:
- `act` for inference, one step for a batch of agents `[B, ...]`;
- `evaluate` for learning, whole trajectories `[T, B, ...]` (time-major) with truncated BPTT.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import gymnasium as gym
import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from surge.cfg.config import Config
from surge.envs.action_masks import MASK_KEY, has_action_mask, model_obs_space, split_obs, unwrapped_key
from surge.errors import ConfigError
from surge.models.body import make_body
from surge.models.cores import Core
from surge.models.distributions import (
    ActionDistribution,
    apply_action_mask,
    make_distribution,
    num_action_logits,
)
from surge.models.encoders import ACTIVATIONS, Encoder
from surge.models.initializers import init_weight
from surge.models.model_checks import check_model_flags
from surge.models.normalization import DictNormalizer, RunningMeanStd, make_obs_normalizer
from surge.models.prev_inputs import StripPrev, split_prev, split_prev_space

Obs = Tensor | dict[str, Tensor]


@dataclass
class ActOutput:
    """Result of `ActorCritic.act` for B agents.

    actions `[B, *action_shape]`; log_probs `[B]` float32 (behavior log-probs); values `[B]`;
    logits `[B, num_action_logits]`; rnn_states `[B, state_size]` (the state after this step).
    """

    actions: Tensor
    log_probs: Tensor
    values: Tensor
    logits: Tensor
    rnn_states: Tensor


def _map_obs(obs: Obs, fn: Callable[[Tensor], Tensor]) -> Obs:
    return {k: fn(v) for k, v in obs.items()} if isinstance(obs, dict) else fn(obs)


class _StripMask(nn.Module):
    """An observation normaliser that sees observations without their `action_mask` entry (the
    learner updates the model's normaliser with the stored observations, masks included)."""

    def __init__(self, inner: RunningMeanStd | DictNormalizer, key: str | None):
        super().__init__()
        self.inner, self.key = inner, key

    def update(self, obs: dict[str, Tensor]) -> None:
        self.inner.update(split_obs(obs, self.key)[0])

    def forward(self, obs: Any) -> Any:
        return self.inner(obs)


class ActorCritic(nn.Module):
    """Actor-critic for one agent's observation and action spaces: shared weights (the default),
    or a separate critic stream (`critic_encoder`, `critic_core`) when
    `actor_critic_share_weights=False`; `rnn_state_size` is then the sum of both cores' states.

    An observation space with an `action_mask` entry (`surge.envs.action_masks`) is split: the
    encoder sees the rest, the mask sets illegal actions' logits to `MASKED_LOGIT` in `act` and
    `evaluate` (so they get probability 0 and no gradient), and is never an input feature.

    With `--use_prev_action_reward` the observation's `prev_action` `[B, A]` and `prev_reward`
    `[B, 1]` entries (`surge.envs.prev_action_reward`) are not encoded: they are concatenated to
    each encoder's output before its core (`surge.models.prev_inputs`, rlpyt's layout).
    """

    def __init__(self, cfg: Config, obs_space: gym.Space, action_space: gym.Space):
        super().__init__()
        check_model_flags(cfg)
        self.action_space = action_space
        self.is_gaussian = isinstance(action_space, gym.spaces.Box)
        mu_activation = cfg.mu_activation
        if mu_activation != "none" and not self.is_gaussian:
            raise ConfigError(
                "mu_activation",
                f"applies to the mean of a Gaussian policy; the action space is {action_space}.",
                "pass --mu_activation=none.",
            )
        #: A + 1 with --use_prev_action_reward (the features concatenated before the core), else 0
        self.prev_width = 0
        if getattr(cfg, "use_prev_action_reward", False):
            obs_space, self.prev_width = split_prev_space(obs_space)
        self.has_action_mask = has_action_mask(obs_space)
        self._masks_applied = False  # set once act or evaluate masks logits (an explicit action_mask)
        self._obs_key = unwrapped_key(obs_space)  # the one other entry of a masked Dict, or None
        obs_space = model_obs_space(obs_space)
        self.obs_normalizer: RunningMeanStd | DictNormalizer | _StripMask | StripPrev | None = (
            make_obs_normalizer(obs_space, cfg.obs_subtract_mean, cfg.obs_scale)
            if cfg.normalize_input
            else None
        )
        if self.obs_normalizer is not None and self.has_action_mask:
            self.obs_normalizer = _StripMask(self.obs_normalizer, self._obs_key)
        if self.obs_normalizer is not None and self.prev_width:
            self.obs_normalizer = StripPrev(self.obs_normalizer)
        if self.obs_normalizer is not None:  # images arrive scaled and standardised
            cfg = dataclasses.replace(cfg, obs_subtract_mean=0.0, obs_scale=1.0)
        self.returns_normalizer = RunningMeanStd((), clip=1e9) if cfg.normalize_returns else None
        # actor (or shared) stream: parameter names encoder.*, core.* as before these options
        actor = make_body(cfg, obs_space, self.prev_width)
        self.encoder, self.core, self.post_core = actor.encoder, actor.core, actor.post
        self.separate = not cfg.actor_critic_share_weights
        self._actor_state_size = int(self.core.state_size)
        self.rnn_state_size: int = self._actor_state_size
        critic_out = actor.out_size
        if self.separate:  # rl_games' separate: True; the RNN state is [actor's, critic's]
            critic = make_body(cfg, obs_space, self.prev_width)
            self.critic_encoder, self.critic_core = critic.encoder, critic.core
            self.critic_post_core = critic.post
            self.rnn_state_size += int(self.critic_core.state_size)
            critic_out = critic.out_size
        self.num_logits = num_action_logits(action_space)
        self.adaptive_stddev = bool(cfg.adaptive_stddev)
        self.mu_act: nn.Module | None = None if mu_activation == "none" else ACTIVATIONS[mu_activation]()
        head_out = self.num_logits // 2 if self.is_gaussian and not self.adaptive_stddev else self.num_logits
        self.policy_head = nn.Linear(actor.out_size, head_out)
        self.value_head = nn.Linear(critic_out, 1)
        if self.is_gaussian and not self.adaptive_stddev:
            init = float(torch.tensor(cfg.initial_stddev).log())
            self.log_std = nn.Parameter(torch.full((self.num_logits // 2,), init))
        self._initialize(cfg)
        # Conv weights in channels-last (NHWC) memory order, as the image encoders give their
        # input: oneDNN's NHWC convolutions train the Nature CNN 25-30% faster per sample on CPU
        # than NCHW (benchmarks/conv_layout.py). Only 4-D tensors change; logical shapes,
        # state_dict keys and values do not, so checkpoints load either way.
        self.to(memory_format=torch.channels_last)  # type: ignore[call-overload] # torch's stub of Module.to lacks memory_format

    def _encoder_like_layers(self) -> set[int]:
        """ids of the modules `encoder_initialization` governs: the encoders, and the MLP layers
        `--rnn_before_mlp` moved after the core."""
        parts = [self.encoder, self.post_core]
        if self.separate:
            parts += [self.critic_encoder, self.critic_post_core]
        return {id(m) for part in parts if part is not None for m in part.modules()}

    def _initialize(self, cfg: Config) -> None:
        """Biases start at 0; weights as `policy_initialization` (`surge.models.initializers`; the
        encoder's as `encoder_initialization`); the action and value heads orthogonal with gains
        `action_head_init_gain` and 1, unless `policy_initialization=torch_default`."""
        encoder_default = cfg.encoder_initialization == "torch_default"
        encoder_layers = self._encoder_like_layers()
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                if parametrize.is_parametrized(m, "weight"):  # spectral norm: the raw weight
                    plist = cast(nn.ModuleDict, m.parametrizations)["weight"]
                    weight = cast(parametrize.ParametrizationList, plist).original
                else:
                    weight = m.weight
                if m.bias is not None:  # a layer built with bias=False has none to zero
                    nn.init.zeros_(m.bias)
                if cfg.policy_initialization == "torch_default" or (
                    encoder_default and id(m) in encoder_layers
                ):
                    continue
                init_weight(weight, cfg.policy_initialization, cfg.policy_init_gain)
        if cfg.policy_initialization != "torch_default":
            nn.init.orthogonal_(self.policy_head.weight, gain=cfg.action_head_init_gain)
            nn.init.orthogonal_(self.value_head.weight, gain=1.0)
        if self.is_gaussian and self.adaptive_stddev:
            with torch.no_grad():
                half = self.num_logits // 2
                self.policy_head.bias[half:] = float(torch.tensor(cfg.initial_stddev).log())

    def split_prev(self, obs: Obs) -> tuple[Obs, Tensor | None]:
        """`(the observation without the previous action and reward, those as `[..., A + 1]`
        float32)` with `--use_prev_action_reward`, else `(obs, None)`."""
        if not self.prev_width:
            return obs, None
        assert isinstance(obs, dict)
        return split_prev(obs)

    def split_mask(self, obs: Obs, action_mask: Tensor | None = None) -> tuple[Obs, Tensor | None]:
        """`(the encoder's observation, the action mask or None)`: the `action_mask` entry of a
        masked observation dict is taken out (an explicit `action_mask` argument wins)."""
        if self.has_action_mask and isinstance(obs, dict) and MASK_KEY in obs:
            obs, stored = split_obs(obs, self._obs_key)
            return obs, stored if action_mask is None else action_mask
        return obs, action_mask

    def _normalize(self, obs: Obs) -> Obs:
        return obs if self.obs_normalizer is None else self.obs_normalizer(obs)

    def _encode(self, obs: Obs) -> Tensor:
        """The actor's (or shared) encoder features `[B, encoder.out_size]` of raw observations."""
        return self.encoder(self._normalize(obs))

    @staticmethod
    def _step(
        body: tuple[Encoder, Core, nn.Module | None], obs: Obs, state: Tensor, prev: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        encoder, core, post = body
        x = encoder(obs)
        if prev is not None:  # rlpyt: [features, prev_action, prev_reward] into the core
            x = torch.cat([x, prev.to(x.dtype)], dim=-1)
        x, new_state = core.step(x, state)
        return (x if post is None else post(x)), new_state

    @staticmethod
    def _sequence(
        body: tuple[Encoder, Core, nn.Module | None],
        flat_obs: Obs,
        T: int,
        B: int,
        states: Tensor,
        dones: Tensor,
        recurrence: int,
        prev: Tensor | None,
    ) -> Tensor:
        encoder, core, post = body
        x = encoder(flat_obs).view(T, B, -1)
        if prev is not None:  # [T, B, A + 1], as in `_step`
            x = torch.cat([x, prev.to(x.dtype)], dim=-1)
        x = core.sequence(x, states, dones, recurrence)
        return x if post is None else post(x)

    def _actor_body(self) -> tuple[Encoder, Core, nn.Module | None]:
        return self.encoder, self.core, self.post_core

    def _critic_body(self) -> tuple[Encoder, Core, nn.Module | None]:
        return self.critic_encoder, self.critic_core, self.critic_post_core

    def _heads(self, x: Tensor, critic_x: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Policy logits `[..., num_logits]` from actor features x `[..., F]` and values `[...]`
        from `critic_x` (x when the weights are shared). `mu_activation` acts on the Gaussian mean
        (rl_games' `mu_act(self.mu(out))`)."""
        logits = self.policy_head(x)
        if self.mu_act is not None:
            if self.adaptive_stddev:
                half = self.num_logits // 2
                logits = torch.cat([self.mu_act(logits[..., :half]), logits[..., half:]], dim=-1)
            else:
                logits = self.mu_act(logits)
        if self.is_gaussian and not self.adaptive_stddev:
            logits = torch.cat([logits, self.log_std.expand_as(logits)], dim=-1)
        return logits, self.value_head(x if critic_x is None else critic_x).squeeze(-1)

    def distribution(self, logits: Tensor, action_mask: Tensor | None = None) -> ActionDistribution:
        """The action distribution parameterised by `logits` `[..., num_logits]`; `action_mask`
        `[..., num_logits]` bool or 0/1 (1 = legal) gives illegal actions probability 0."""
        # logits this model never masked (no mask in its observations, none passed to act or
        # evaluate) take the symmetric KL's plain formula
        all_legal = not (self.has_action_mask or self._masks_applied)
        return make_distribution(self.action_space, logits, action_mask, all_legal=all_legal)

    @torch.no_grad()
    def act(
        self, obs: Obs, rnn_states: Tensor, deterministic: bool = False, action_mask: Tensor | None = None
    ) -> ActOutput:
        """One inference step. obs `[B, *obs_shape]` (or a dict of them; an `action_mask` entry
        `[B, num_logits]` masks the actions), rnn_states `[B, state_size]`, action_mask `[B,
        num_logits]` bool or 0/1 (1 = legal) or None. The returned logits are the masked ones.
        With `--use_prev_action_reward` obs is a dict with `prev_action` `[B, A]` and `prev_reward`
        `[B, 1]` entries."""
        prev = None
        if self.prev_width:  # (inline: no call on inference's path without the flag)
            obs, prev = self.split_prev(obs)
        obs, action_mask = self.split_mask(obs, action_mask)
        obs = self._normalize(obs)
        if self.separate:
            n = self._actor_state_size
            x, actor_states = self._step(self._actor_body(), obs, rnn_states[:, :n], prev)
            v, critic_states = self._step(self._critic_body(), obs, rnn_states[:, n:], prev)
            logits, values = self._heads(x, v)
            new_states = torch.cat([actor_states, critic_states], dim=1)
        else:
            x, new_states = self._step(self._actor_body(), obs, rnn_states, prev)
            logits, values = self._heads(x)
        if logits.dtype != torch.float32:  # under autocast (--mixed_precision): sample in float32
            logits, values = logits.float(), values.float()
        if action_mask is not None:
            logits, self._masks_applied = apply_action_mask(self.action_space, logits, action_mask), True
        dist = self.distribution(logits)
        if deterministic:
            actions = dist.mode()
            return ActOutput(actions, dist.log_prob(actions), values, logits, new_states)
        actions, log_prob = dist.sample_with_log_prob()
        return ActOutput(actions, log_prob, values, logits, new_states)

    def evaluate(
        self,
        obs: Obs,
        rnn_states: Tensor,
        dones: Tensor,
        recurrence: int,
        action_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Forward pass over trajectories for learning.

        Args:
            obs: `[T, B, *obs_shape]` (or a dict of them; an `action_mask` entry masks the logits;
                `prev_action` `[T, B, A]` and `prev_reward` `[T, B, 1]` entries with
                `--use_prev_action_reward`).
            rnn_states: `[T, B, state_size]` stored behavior states (used at BPTT chunk starts).
            dones: `[T, B]` float32, 1 where the episode ended at step t.
            recurrence: BPTT chunk length in steps.
            action_mask: `[T, B, num_logits]` bool or 0/1 (1 = legal), or None.
        Returns:
            logits `[T, B, num_logits]` (illegal actions at `MASKED_LOGIT`, with zero gradient)
            and values `[T, B]` float32.
        """
        obs, prev = self.split_prev(obs)
        obs, action_mask = self.split_mask(obs, action_mask)
        first = next(iter(obs.values())) if isinstance(obs, dict) else obs
        T, B = first.shape[:2]
        flat = self._normalize(_map_obs(obs, lambda v: v.reshape(T * B, *v.shape[2:])))
        if self.separate:
            n = self._actor_state_size
            x = self._sequence(self._actor_body(), flat, T, B, rnn_states[..., :n], dones, recurrence, prev)
            v = self._sequence(self._critic_body(), flat, T, B, rnn_states[..., n:], dones, recurrence, prev)
            logits, values = self._heads(x, v)
        else:
            x = self._sequence(self._actor_body(), flat, T, B, rnn_states, dones, recurrence, prev)
            logits, values = self._heads(x)
        if action_mask is not None:
            logits, self._masks_applied = apply_action_mask(self.action_space, logits, action_mask), True
        return logits, values


ModelFactory = Callable[[Any, gym.Space, gym.Space], "ActorCritic"]
_CUSTOM_MODELS: dict[str, ModelFactory] = {}


def register_model(env_name_prefix: str, factory: ModelFactory) -> None:
    """Registers a whole custom actor-critic for envs whose name starts with `env_name_prefix`.
    The factory gets (cfg, obs_space, action_space) and returns a module with ActorCritic's API."""
    _CUSTOM_MODELS[env_name_prefix] = factory


def make_actor_critic(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ActorCritic:
    """A custom model registered for `cfg.env`'s prefix, else `ActorCritic`."""
    for prefix, factory in sorted(_CUSTOM_MODELS.items(), key=lambda kv: -len(kv[0])):
        if cfg.env.startswith(prefix):
            return factory(cfg, obs_space, action_space)
    return ActorCritic(cfg, obs_space, action_space)
