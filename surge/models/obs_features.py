"""The observation half of the off-policy networks: an optional action-mask split, the optional
running observation normaliser (`cfg.normalize_input`), then surge's encoder for the space
(`surge.models.encoders.make_encoder`: an MLP for vectors, the conv nets for images, one encoder
per key for dicts). Shared by `QNetwork`, `ContinuousActor` and the Q-critics.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
from torch import Tensor, nn

from surge.cfg.config import Config
from surge.envs.action_masks import MASK_KEY, has_action_mask, model_obs_space, split_obs, unwrapped_key
from surge.models.encoders import Encoder, make_encoder
from surge.models.normalization import make_obs_normalizer

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
    (the actor's and critics' own MLP follows).
    """

    def __init__(self, cfg: Config, obs_space: gym.Space, flatten_vectors: bool = False):
        super().__init__()
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
        self.out_size: int = int(self.encoder.out_size)

    def split(self, obs: Obs) -> tuple[Obs, Tensor | None]:
        """`(the encoder's observation, the action mask or None)`."""
        if self.has_action_mask and isinstance(obs, dict) and MASK_KEY in obs:
            return split_obs(obs, self._obs_key)
        return obs, None

    def forward(self, obs: Obs, lead_dims: int = 1) -> tuple[Tensor, Tensor | None]:
        obs, mask = self.split(obs)
        first = next(iter(obs.values())) if isinstance(obs, dict) else obs
        lead = tuple(first.shape[:lead_dims])

        def flat(v: Tensor) -> Tensor:
            return v.reshape(-1, *v.shape[lead_dims:])

        x = {k: flat(v) for k, v in obs.items()} if isinstance(obs, dict) else flat(obs)
        if self.normalizer is not None:
            x = self.normalizer(x)
        feats = self.encoder(x)
        return feats.reshape(*lead, feats.shape[-1]), mask
