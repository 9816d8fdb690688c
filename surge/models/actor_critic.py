"""The actor-critic: encoder -> core (GRU/LSTM/none) -> policy logits and value.

Two entry points share all weights:
- `act` for inference, one step for a batch of agents `[B, ...]`;
- `evaluate` for learning, whole trajectories `[T, B, ...]` (time-major) with truncated BPTT.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from surge.envs.action_masks import MASK_KEY, has_action_mask, model_obs_space, split_obs, unwrapped_key
from surge.errors import ConfigError
from surge.models.cores import make_core
from surge.models.distributions import (
    ActionDistribution,
    apply_action_mask,
    make_distribution,
    num_action_logits,
)
from surge.models.encoders import make_encoder
from surge.models.normalization import RunningMeanStd, make_obs_normalizer

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

    def __init__(self, inner: nn.Module, key: str | None):
        super().__init__()
        self.inner, self.key = inner, key

    def update(self, obs: dict[str, Tensor]) -> None:
        self.inner.update(split_obs(obs, self.key)[0])  # type: ignore[operator]

    def forward(self, obs: Any) -> Any:
        return self.inner(obs)


class ActorCritic(nn.Module):
    """Shared-weights actor-critic for one agent's observation and action spaces.

    An observation space with an `action_mask` entry (`surge.envs.action_masks`) is split: the
    encoder sees the rest, the mask sets illegal actions' logits to `MASKED_LOGIT` in `act` and
    `evaluate` (so they get probability 0 and no gradient), and is never an input feature.
    """

    def __init__(self, cfg: Any, obs_space: gym.Space, action_space: gym.Space):
        super().__init__()
        if not cfg.actor_critic_share_weights:
            raise ConfigError(
                "actor_critic_share_weights",
                "separate actor and critic networks are not supported yet.",
                "leave it True (the default).",
            )
        self.action_space = action_space
        self.has_action_mask = has_action_mask(obs_space)
        self._obs_key = unwrapped_key(obs_space)  # the one other entry of a masked Dict, or None
        obs_space = model_obs_space(obs_space)
        self.obs_normalizer = (
            make_obs_normalizer(obs_space, cfg.obs_subtract_mean, cfg.obs_scale)
            if cfg.normalize_input
            else None
        )
        if self.obs_normalizer is not None and self.has_action_mask:
            self.obs_normalizer = _StripMask(self.obs_normalizer, self._obs_key)
        if self.obs_normalizer is not None:  # images arrive scaled and standardised
            cfg = dataclasses.replace(cfg, obs_subtract_mean=0.0, obs_scale=1.0)
        self.returns_normalizer = RunningMeanStd((), clip=1e9) if cfg.normalize_returns else None
        self.encoder = make_encoder(cfg, obs_space)
        self.core = make_core(
            cfg.use_rnn, self.encoder.out_size, cfg.hidden_size, cfg.rnn_type, cfg.rnn_num_layers
        )
        self.rnn_state_size: int = int(self.core.state_size)
        self.num_logits = num_action_logits(action_space)
        self.is_gaussian = isinstance(action_space, gym.spaces.Box)
        self.adaptive_stddev = bool(cfg.adaptive_stddev)
        head_out = self.num_logits // 2 if self.is_gaussian and not self.adaptive_stddev else self.num_logits
        self.policy_head = nn.Linear(self.core.out_size, head_out)
        self.value_head = nn.Linear(self.core.out_size, 1)
        if self.is_gaussian and not self.adaptive_stddev:
            init = float(torch.tensor(cfg.initial_stddev).log())
            self.log_std = nn.Parameter(torch.full((self.num_logits // 2,), init))
        self._initialize(cfg)
        # Conv weights in channels-last (NHWC) memory order, as the image encoders give their
        # input: oneDNN's NHWC convolutions train the Nature CNN 25-30% faster per sample on CPU
        # than NCHW (benchmarks/conv_layout.py). Only 4-D tensors change; logical shapes,
        # state_dict keys and values do not, so checkpoints load either way.
        self.to(memory_format=torch.channels_last)

    def _initialize(self, cfg: Any) -> None:
        """Biases start at 0; weights as `policy_initialization` (the encoder's as
        `encoder_initialization`); the action and value heads orthogonal with gains
        `action_head_init_gain` and 1, unless `policy_initialization=torch_default`."""
        encoder_default = cfg.encoder_initialization == "torch_default"
        encoder_layers = {id(m) for m in self.encoder.modules()}
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                weight = (
                    m.parametrizations.weight.original
                    if parametrize.is_parametrized(m, "weight")
                    else m.weight
                )
                nn.init.zeros_(m.bias)
                if cfg.policy_initialization == "torch_default" or (
                    encoder_default and id(m) in encoder_layers
                ):
                    continue
                if cfg.policy_initialization == "orthogonal":
                    nn.init.orthogonal_(weight, gain=cfg.policy_init_gain)
                else:
                    nn.init.xavier_uniform_(weight, gain=cfg.policy_init_gain)
        if cfg.policy_initialization != "torch_default":
            nn.init.orthogonal_(self.policy_head.weight, gain=cfg.action_head_init_gain)
            nn.init.orthogonal_(self.value_head.weight, gain=1.0)
        if self.is_gaussian and self.adaptive_stddev:
            with torch.no_grad():
                half = self.num_logits // 2
                self.policy_head.bias[half:] = float(torch.tensor(cfg.initial_stddev).log())

    def split_mask(self, obs: Obs, action_mask: Tensor | None = None) -> tuple[Obs, Tensor | None]:
        """`(the encoder's observation, the action mask or None)`: the `action_mask` entry of a
        masked observation dict is taken out (an explicit `action_mask` argument wins)."""
        if self.has_action_mask and isinstance(obs, dict) and MASK_KEY in obs:
            obs, stored = split_obs(obs, self._obs_key)
            return obs, stored if action_mask is None else action_mask
        return obs, action_mask

    def _encode(self, obs: Obs) -> Tensor:
        if self.obs_normalizer is not None:
            obs = self.obs_normalizer(obs)
        return self.encoder(obs)

    def _heads(self, x: Tensor) -> tuple[Tensor, Tensor]:
        logits = self.policy_head(x)
        if self.is_gaussian and not self.adaptive_stddev:
            logits = torch.cat([logits, self.log_std.expand_as(logits)], dim=-1)
        return logits, self.value_head(x).squeeze(-1)

    def distribution(self, logits: Tensor, action_mask: Tensor | None = None) -> ActionDistribution:
        """The action distribution parameterised by `logits` `[..., num_logits]`; `action_mask`
        `[..., num_logits]` bool or 0/1 (1 = legal) gives illegal actions probability 0."""
        return make_distribution(self.action_space, logits, action_mask)

    @torch.no_grad()
    def act(
        self, obs: Obs, rnn_states: Tensor, deterministic: bool = False, action_mask: Tensor | None = None
    ) -> ActOutput:
        """One inference step. obs `[B, *obs_shape]` (or a dict of them; an `action_mask` entry
        `[B, num_logits]` masks the actions), rnn_states `[B, state_size]`, action_mask `[B,
        num_logits]` bool or 0/1 (1 = legal) or None. The returned logits are the masked ones."""
        obs, action_mask = self.split_mask(obs, action_mask)
        x, new_states = self.core.step(self._encode(obs), rnn_states)
        logits, values = self._heads(x)
        if action_mask is not None:
            logits = apply_action_mask(self.action_space, logits, action_mask)
        dist = self.distribution(logits)
        actions = dist.mode() if deterministic else dist.sample()
        return ActOutput(actions, dist.log_prob(actions), values, logits, new_states)

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
            obs: `[T, B, *obs_shape]` (or a dict of them; an `action_mask` entry masks the logits).
            rnn_states: `[T, B, state_size]` stored behavior states (used at BPTT chunk starts).
            dones: `[T, B]` float32, 1 where the episode ended at step t.
            recurrence: BPTT chunk length in steps.
            action_mask: `[T, B, num_logits]` bool or 0/1 (1 = legal), or None.
        Returns:
            logits `[T, B, num_logits]` (illegal actions at `MASKED_LOGIT`, with zero gradient)
            and values `[T, B]` float32.
        """
        obs, action_mask = self.split_mask(obs, action_mask)
        first = next(iter(obs.values())) if isinstance(obs, dict) else obs
        T, B = first.shape[:2]
        feats = self._encode(_map_obs(obs, lambda v: v.reshape(T * B, *v.shape[2:])))
        x = self.core.sequence(feats.view(T, B, -1), rnn_states, dones, recurrence)
        logits, values = self._heads(x)
        if action_mask is not None:
            logits = apply_action_mask(self.action_space, logits, action_mask)
        return logits, values


ModelFactory = Callable[[Any, gym.Space, gym.Space], "ActorCritic"]
_CUSTOM_MODELS: dict[str, ModelFactory] = {}


def register_model(env_name_prefix: str, factory: ModelFactory) -> None:
    """Registers a whole custom actor-critic for envs whose name starts with `env_name_prefix`.
    The factory gets (cfg, obs_space, action_space) and returns a module with ActorCritic's API."""
    _CUSTOM_MODELS[env_name_prefix] = factory


def make_actor_critic(cfg: Any, obs_space: gym.Space, action_space: gym.Space) -> ActorCritic:
    """A custom model registered for `cfg.env`'s prefix, else `ActorCritic`."""
    for prefix, factory in sorted(_CUSTOM_MODELS.items(), key=lambda kv: -len(kv[0])):
        if cfg.env.startswith(prefix):
            return factory(cfg, obs_space, action_space)
    return ActorCritic(cfg, obs_space, action_space)
