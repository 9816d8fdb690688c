"""Actors and Q-critics for continuous (Box) actions: DDPG, TD3 and SAC.

The actor acts in the normalised space [-1, 1]^D; `to_env` rescales to the Box bounds
(`low + (a + 1)(high − low)/2`) and `from_env` back, as Stable-Baselines3 does: replay stores and
critics see normalised actions. Image and dict observations go through surge's encoder for their
space (`ObsFeatures`), vector ones are only flattened; then an MLP of `hidden_sizes` (256, 256 with
ReLU: the sizes of Fujimoto et al. 2018 and Haarnoja et al. 2018, and Stable-Baselines3's defaults
for TD3 and SAC).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from surge.cfg.config import Config
from surge.errors import EnvError
from surge.models.encoders import ACTIVATIONS, _mlp
from surge.models.obs_features import Obs, ObsFeatures
from surge.models.squashed_gaussian import squashed_gaussian_sample

#: log-std bounds of the Gaussian actor (Stable-Baselines3's LOG_STD_MIN/MAX and rlpyt's)
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


def _box(action_space: gym.Space) -> tuple[int, Tensor, Tensor]:
    if not isinstance(action_space, gym.spaces.Box):
        raise EnvError(f"continuous actors and critics need a Box action space, got {action_space}")
    low = np.asarray(action_space.low, dtype=np.float64).ravel()
    high = np.asarray(action_space.high, dtype=np.float64).ravel()
    if not (np.isfinite(low).all() and np.isfinite(high).all()):
        raise EnvError(
            f"the action space {action_space} has infinite bounds: a tanh-squashed actor needs finite "
            "ones (clip the actions with a wrapper, e.g. gymnasium.wrappers.ClipAction after bounding)"
        )
    t = torch.float32
    return int(low.size), torch.as_tensor(low, dtype=t), torch.as_tensor(high, dtype=t)


class ActorOutput(NamedTuple):
    """`actions` `[B, D]` float32 in [-1, 1]; `log_probs` `[B]` (Gaussian actor) or None."""

    actions: Tensor
    log_probs: Tensor | None


class ContinuousActor(nn.Module):
    """A deterministic tanh actor (`gaussian=False`: DDPG, TD3, `a = tanh(f(s))`) or a tanh-squashed
    Gaussian (`gaussian=True`: SAC, mean and clamped log-std heads, Haarnoja et al. 2018).

    Args:
        cfg: a surge `Config` (its encoder fields; only images and dicts use them).
        obs_space: the observation space; action_space: a Box with finite bounds.
        hidden_sizes: the MLP after the encoder; activation: "relu", "elu" or "tanh".
    Raises:
        EnvError: a non-Box action space or infinite bounds.
    """

    low: Tensor
    high: Tensor

    def __init__(
        self,
        cfg: Config,
        obs_space: gym.Space,
        action_space: gym.Space,
        *,
        gaussian: bool = False,
        hidden_sizes: tuple[int, ...] = (256, 256),
        activation: str = "relu",
    ):
        super().__init__()
        self.action_dim, low, high = _box(action_space)
        self.register_buffer("low", low)
        self.register_buffer("high", high)
        self.gaussian = gaussian
        self.features = ObsFeatures(cfg, obs_space, flatten_vectors=True)
        self.mlp, h = _mlp(self.features.out_size, list(hidden_sizes), ACTIVATIONS[activation])
        self.mu = nn.Linear(h, self.action_dim)
        self.log_std = nn.Linear(h, self.action_dim) if gaussian else None

    def to_env(self, actions: Tensor) -> Tensor:
        """`[B, D]` in [-1, 1] -> the Box's units, `low + (a + 1)(high − low)/2`."""
        return self.low + (actions + 1.0) * 0.5 * (self.high - self.low)

    def from_env(self, env_actions: Tensor) -> Tensor:
        """The inverse of `to_env`: Box units -> [-1, 1]."""
        return 2.0 * (env_actions - self.low) / (self.high - self.low) - 1.0

    def distribution_params(self, obs: Obs) -> tuple[Tensor, Tensor]:
        """Gaussian actor: `(mean, log_std)` `[B, D]`, log_std clamped to [-20, 2].

        Raises:
            RuntimeError: on a deterministic actor.
        """
        if self.log_std is None:
            raise RuntimeError("distribution_params needs gaussian=True")
        x = self.mlp(self.features(obs)[0])
        return self.mu(x), self.log_std(x).clamp(LOG_STD_MIN, LOG_STD_MAX)

    def forward(self, obs: Obs, deterministic: bool = False) -> ActorOutput:
        """obs `[B, *obs_shape]` -> actions `[B, D]` in [-1, 1] (with gradient) and, for the
        Gaussian actor, log-probs `[B]` of those squashed actions (`tanh(mean)` when deterministic).
        A deterministic actor ignores `deterministic`: exploration noise is the caller's."""
        if self.log_std is None:
            return ActorOutput(torch.tanh(self.mu(self.mlp(self.features(obs)[0]))), None)
        mean, log_std = self.distribution_params(obs)
        s = squashed_gaussian_sample(mean, log_std, deterministic=deterministic)
        return ActorOutput(s.actions, s.log_probs)


class QCritic(nn.Module):
    """`Q(s, a)`: encoder features of s concatenated with a `[B, D]` (normalised), then an MLP of
    `hidden_sizes` and a scalar output (Lillicrap et al. 2016 feed the action at the second layer;
    TD3, SAC and Stable-Baselines3 at the input, as here). Returns `[B]` float32.

    Raises:
        EnvError: a non-Box action space.
    """

    def __init__(
        self,
        cfg: Config,
        obs_space: gym.Space,
        action_space: gym.Space,
        *,
        hidden_sizes: tuple[int, ...] = (256, 256),
        activation: str = "relu",
    ):
        super().__init__()
        action_dim = _box(action_space)[0]
        self.features = ObsFeatures(cfg, obs_space, flatten_vectors=True)
        self.mlp, h = _mlp(self.features.out_size + action_dim, list(hidden_sizes), ACTIVATIONS[activation])
        self.out = nn.Linear(h, 1)

    def forward(self, obs: Obs, actions: Tensor) -> Tensor:
        x = torch.cat([self.features(obs)[0], actions], dim=-1)
        return self.out(self.mlp(x)).squeeze(-1)


class TwinQCritic(nn.Module):
    """Two independent `QCritic`s (no shared weights; Fujimoto et al. 2018, section 4.1; Haarnoja
    et al. 2018, section 6). `forward(obs, actions) -> (q1 [B], q2 [B])`; `q1` alone for TD3's
    actor loss."""

    def __init__(self, cfg: Config, obs_space: gym.Space, action_space: gym.Space, **kwargs: Any):
        super().__init__()
        self.q1_net = QCritic(cfg, obs_space, action_space, **kwargs)
        self.q2_net = QCritic(cfg, obs_space, action_space, **kwargs)

    def forward(self, obs: Obs, actions: Tensor) -> tuple[Tensor, Tensor]:
        return self.q1_net(obs, actions), self.q2_net(obs, actions)

    def q1(self, obs: Obs, actions: Tensor) -> Tensor:
        return self.q1_net(obs, actions)
