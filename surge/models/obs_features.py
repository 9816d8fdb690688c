"""The observation half of the off-policy networks: an optional action-mask split, the optional
running observation normaliser (`cfg.normalize_input`), then surge's encoder for the space
(`surge.models.encoders.make_encoder`: an MLP for vectors, the conv nets for images, one encoder
per key for dicts). Shared by `QNetwork`, `ContinuousActor` and the Q-critics. With
`--use_prev_action_reward` the previous action and reward (`surge.models.prev_inputs`) are
concatenated to the encoder's output, so they reach R2D2's core as in rlpyt's R2D1.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from surge.cfg.config import Config
from surge.envs.action_masks import MASK_KEY, has_action_mask, model_obs_space, split_obs, unwrapped_key
from surge.models.encoders import Encoder, make_encoder
from surge.models.normalization import make_obs_normalizer
from surge.models.prev_inputs import split_prev, split_prev_space

Obs = Tensor | dict[str, Tensor]


class FlattenEncoder(Encoder):
    """Vector observations `[N, *shape]` -> `[N, prod(shape)]` float32, unchanged otherwise."""

    def __init__(self, shape: tuple[int, ...]):
        super().__init__()
        self.out_size = int(np.prod(shape))

    def forward(self, obs: Tensor) -> Tensor:
        return obs.float().flatten(1)


class ObsFeatures(nn.Module):
    """Observations `[N, *obs_shape]` (or a dict of them) -> features `[N, out_size]` float32.

    `forward` takes any number of leading dims (`lead_dims`=1 for `[B, ...]`, 2 for time-major
    `[T, B, ...]`) and returns `(features [*lead, out_size], action_mask [*lead, A] or None)`.
    `flatten_vectors`: a vector (non-image) Box is only flattened, not put through the cfg's MLP
    (the actor's and critics' own MLP follows). With `--use_prev_action_reward` the last A + 1 of
    the features are the observation's `prev_action` `[..., A]` and `prev_reward` `[..., 1]`.
    """

    def __init__(self, cfg: Config, obs_space: gym.Space, flatten_vectors: bool = False):
        super().__init__()
        #: A + 1 with --use_prev_action_reward (the features after the encoder's), else 0
        self.prev_width = 0
        if getattr(cfg, "use_prev_action_reward", False):
            obs_space, self.prev_width = split_prev_space(obs_space)
        self.has_action_mask = has_action_mask(obs_space)
        self._obs_key = unwrapped_key(obs_space)
        space = model_obs_space(obs_space)
        self.normalizer = (
            make_obs_normalizer(space, cfg.obs_subtract_mean, cfg.obs_scale) if cfg.normalize_input else None
        )
        if self.normalizer is not None:  # images arrive scaled and standardised (as ActorCritic)
            cfg = dataclasses.replace(cfg, obs_subtract_mean=0.0, obs_scale=1.0)
        is_vector = isinstance(space, gym.spaces.Box) and len(space.shape) != 3
        self.encoder = (
            FlattenEncoder(tuple(space.shape or ()))
            if flatten_vectors and is_vector
            else make_encoder(cfg, space)
        )
        self.out_size: int = int(self.encoder.out_size) + self.prev_width

    def split(self, obs: Obs) -> tuple[Obs, Tensor | None]:
        """`(the encoder's observation, the action mask or None)`."""
        if self.has_action_mask and isinstance(obs, dict) and MASK_KEY in obs:
            return split_obs(obs, self._obs_key)
        return obs, None

    def forward(self, obs: Obs, lead_dims: int = 1) -> tuple[Tensor, Tensor | None]:
        prev = None
        if self.prev_width:
            assert isinstance(obs, dict)
            obs, prev = split_prev(obs)  # prev [*lead, A + 1]
        obs, mask = self.split(obs)
        first = next(iter(obs.values())) if isinstance(obs, dict) else obs
        lead = tuple(first.shape[:lead_dims])

        def flat(v: Tensor) -> Tensor:
            return v.reshape(-1, *v.shape[lead_dims:])

        x = {k: flat(v) for k, v in obs.items()} if isinstance(obs, dict) else flat(obs)
        if self.normalizer is not None:
            x = self.normalizer(x)
        feats = self.encoder(x)
        feats = feats.reshape(*lead, feats.shape[-1])
        if prev is not None:  # rlpyt's R2D1: [features, prev_action, prev_reward] into the core
            feats = torch.cat([feats, prev.to(feats.dtype)], dim=-1)
        return feats, mask
