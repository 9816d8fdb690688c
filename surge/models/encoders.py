"""Observation encoders: MLP, conv nets (Sample Factory's convnet_simple, Nature DQN, IMPALA
shallow), the IMPALA ResNet, and dict observations (one encoder per key, outputs concatenated).

Every encoder maps observations `[B, *obs_shape]` to features `[B, encoder.out_size]` float32.
Image observations are channels-first `[C, H, W]` (uint8 or float) and are converted by
`(obs - obs_subtract_mean) / obs_scale` inside the encoder; vector observations always go through
an MLP, whatever `encoder_type` says (it selects the encoder of images).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from surge.cfg.config import Config
from surge.errors import ConfigError, EnvError
from surge.models.d2rl import D2RLMlp
from surge.models.normalization import scale_pixels

#: `--nonlinearity` choices (rl_games' activations_factory: swish is silu, None is none)
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "elu": nn.ELU,
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "silu": nn.SiLU,
    "gelu": nn.GELU,
    "selu": nn.SELU,
    "softplus": nn.Softplus,
    "sigmoid": nn.Sigmoid,
    "none": nn.Identity,
}

#: (out_channels, kernel, stride) per conv layer
CONV_LAYERS = {
    # Sample Factory v1 convnet_simple
    "convnet_simple": [(32, 8, 4), (64, 4, 2), (128, 3, 2)],
    # Mnih et al. 2015 (Nature DQN)
    "convnet_deepmind": [(32, 8, 4), (64, 4, 2), (64, 3, 1)],
    # Espeholt et al. 2018, shallow IMPALA network
    "convnet_impala": [(16, 8, 4), (32, 4, 2)],
}

EncoderFactory = Callable[[Any, gym.Space], "Encoder"]
_CUSTOM_ENCODERS: dict[str, EncoderFactory] = {}


def register_encoder(name: str, factory: EncoderFactory) -> None:
    """Registers a custom encoder: `factory(cfg, obs_space) -> Encoder`, selected by `--encoder_custom=name`."""
    _CUSTOM_ENCODERS[name] = factory


class Encoder(nn.Module):
    """Base class: subclasses set `self.out_size` and implement `forward(obs) -> [B, out_size]`."""

    out_size: int


def _mlp(
    in_size: int, sizes: list[int], act: type[nn.Module], spectral: bool = False, d2rl: bool = False
) -> tuple[nn.Module, int]:
    """Linear + activation layers; `spectral` wraps each Linear in spectral normalisation
    (Miyato et al. 2018) through `torch.nn.utils.parametrizations.spectral_norm`; `d2rl` makes it a
    `D2RLMlp` (each layer after the first also takes the MLP's input)."""
    if d2rl:
        net = D2RLMlp(in_size, sizes, act, spectral)
        return net, net.out_size
    layers: list[nn.Module] = []
    for size in sizes:
        linear: nn.Module = nn.Linear(in_size, size)
        if spectral:
            linear = nn.utils.parametrizations.spectral_norm(linear)
        layers += [linear, act()]
        in_size = size
    return nn.Sequential(*layers), in_size


class MlpEncoder(Encoder):
    """MLP over flattened vector observations `[B, *shape]` -> `[B, sizes[-1]]`."""

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        sizes: list[int],
        act: type[nn.Module],
        spectral: bool = False,
        d2rl: bool = False,
    ):
        super().__init__()
        self.net, self.out_size = _mlp(int(np.prod(obs_shape)), sizes, act, spectral, d2rl)

    def forward(self, obs: Tensor) -> Tensor:
        return self.net(obs.float().flatten(1))


class _ImageEncoder(Encoder):
    def __init__(self, cfg: Config):
        super().__init__()
        self.obs_subtract_mean = float(cfg.obs_subtract_mean)
        self.obs_scale = float(cfg.obs_scale)

    def _scale(self, obs: Tensor) -> Tensor:
        """`[B, C, H, W]` pixels -> scaled float32 in channels-last (NHWC) memory order, same
        logical shape; `ActorCritic` keeps the conv weights in that order too. (Converting uint8
        straight into a channels-last float tensor measured slower than this contiguous float copy
        plus a reorder: 8.6-9.6 vs 7.1-7.3 ms per 256 Atari frames.)"""
        x = scale_pixels(obs, self.obs_subtract_mean, 1.0 / self.obs_scale)
        return x.contiguous(memory_format=torch.channels_last)

    def _head(self, conv_out: int, cfg: Config, act: type[nn.Module]) -> int:
        fc_sizes = [cfg.hidden_size] * cfg.encoder_extra_fc_layers
        self.fc, out = _mlp(
            conv_out, fc_sizes, act, spectral=cfg.use_spectral_norm, d2rl=getattr(cfg, "d2rl", False)
        )
        return out


class ConvEncoder(_ImageEncoder):
    """Plain conv stack (`CONV_LAYERS[subtype]`) then `encoder_extra_fc_layers` × Linear(hidden_size)."""

    def __init__(self, cfg: Config, obs_shape: tuple[int, ...], subtype: str, act: type[nn.Module]):
        super().__init__(cfg)
        layers: list[nn.Module] = []
        channels = obs_shape[0]
        for out_ch, k, s in CONV_LAYERS[subtype]:
            layers += [nn.Conv2d(channels, out_ch, k, s), act()]
            channels = out_ch
        self.conv = nn.Sequential(*layers, nn.Flatten())
        with torch.no_grad():
            conv_out = self.conv(torch.zeros(1, *obs_shape)).shape[1]
        self.out_size = self._head(conv_out, cfg, act)

    def forward(self, obs: Tensor) -> Tensor:
        return self.fc(self.conv(self._scale(obs)))


class _ResBlock(nn.Module):
    def __init__(self, channels: int, act: type[nn.Module]):
        super().__init__()
        self.body = nn.Sequential(
            act(),
            nn.Conv2d(channels, channels, 3, padding=1),
            act(),
            nn.Conv2d(channels, channels, 3, padding=1),
        )

    def forward(self, x: Tensor) -> Tensor:
        return x + self.body(x)


class ResnetImpalaEncoder(_ImageEncoder):
    """The deep IMPALA network (Espeholt et al. 2018, fig. 3): stacks of conv, max-pool and two
    residual blocks with 16, 32, 32 channels."""

    def __init__(self, cfg: Config, obs_shape: tuple[int, ...], act: type[nn.Module]):
        super().__init__(cfg)
        layers: list[nn.Module] = []
        channels = obs_shape[0]
        for out_ch in (16, 32, 32):
            layers += [
                nn.Conv2d(channels, out_ch, 3, padding=1),
                nn.MaxPool2d(3, stride=2, padding=1),
                _ResBlock(out_ch, act),
                _ResBlock(out_ch, act),
            ]
            channels = out_ch
        self.conv = nn.Sequential(*layers, act(), nn.Flatten())
        with torch.no_grad():
            conv_out = self.conv(torch.zeros(1, *obs_shape)).shape[1]
        self.out_size = self._head(conv_out, cfg, act)

    def forward(self, obs: Tensor) -> Tensor:
        return self.fc(self.conv(self._scale(obs)))


class DictEncoder(Encoder):
    """One encoder per key of a Dict observation space; features concatenated in key order."""

    def __init__(self, cfg: Config, space: gym.spaces.Dict):
        super().__init__()
        self.keys = list(space.spaces.keys())
        encoders = {k: make_encoder(cfg, space.spaces[k]) for k in self.keys}
        self.encoders = nn.ModuleDict(encoders)
        self.out_size = sum(e.out_size for e in encoders.values())

    def forward(self, obs: dict[str, Tensor]) -> Tensor:
        return torch.cat([self.encoders[k](obs[k]) for k in self.keys], dim=1)


class ConcatInput(Encoder):
    """An MLP encoder whose output goes to the RNN core beside its own input, the flattened vector
    observation: `[B, *shape] -> [B, inner.out_size + prod(shape)]`, `cat([mlp(obs), obs])` in
    rl_games' order (`A2CBuilder.Network.forward` with rnn `concat_input`)."""

    def __init__(self, inner: Encoder, obs_shape: tuple[int, ...]):
        super().__init__()
        self.inner = inner
        self.out_size = inner.out_size + int(np.prod(obs_shape))

    def forward(self, obs: Tensor) -> Tensor:
        return torch.cat([self.inner(obs), obs.float().flatten(1)], dim=1)


def mlp_sizes(cfg: Config) -> list[int]:
    """Hidden sizes of the vector-observation MLP for `cfg`."""
    if cfg.encoder_subtype == "mlp_mujoco":
        return [64, 64]
    return [int(s) for s in cfg.encoder_mlp_layers]


def make_encoder(cfg: Config, obs_space: gym.Space) -> Encoder:
    """The encoder for `obs_space` selected by `cfg.encoder_custom`, `encoder_type`, `encoder_subtype`.

    Raises:
        ConfigError: unknown custom encoder or conv subtype.
        EnvError: an observation space no encoder handles.
    """
    act = ACTIVATIONS[cfg.nonlinearity]
    if cfg.encoder_custom:
        if cfg.encoder_custom not in _CUSTOM_ENCODERS:
            raise ConfigError(
                "encoder_custom",
                f"no encoder named {cfg.encoder_custom!r} is registered.",
                f"call surge.models.register_encoder first; registered: {sorted(_CUSTOM_ENCODERS)}",
            )
        return _CUSTOM_ENCODERS[cfg.encoder_custom](cfg, obs_space)
    if isinstance(obs_space, gym.spaces.Dict):
        return DictEncoder(cfg, obs_space)
    if not isinstance(obs_space, gym.spaces.Box):
        raise EnvError(f"observation space {obs_space} is not supported: use Box or Dict of Box")
    shape = tuple(obs_space.shape)
    if len(shape) == 3 and cfg.encoder_type != "mlp":
        if cfg.encoder_type == "resnet":
            return ResnetImpalaEncoder(cfg, shape, act)
        subtype = cfg.encoder_subtype if cfg.encoder_subtype in CONV_LAYERS else "convnet_simple"
        return ConvEncoder(cfg, shape, subtype, act)
    return MlpEncoder(shape, mlp_sizes(cfg), act, cfg.use_spectral_norm, getattr(cfg, "d2rl", False))


def fc_sizes_after_trunk(cfg: Config, obs_space: gym.Space) -> list[int]:
    """The fully connected layers `make_encoder` puts after the observation's trunk (the flattened
    vector, or the conv stack): `mlp_sizes(cfg)` for vector observations,
    `[hidden_size] * encoder_extra_fc_layers` for images. `make_trunk` builds the encoder without them
    (`--rnn_before_mlp` runs the core between the two).

    Raises:
        ConfigError: a custom encoder or a Dict observation space (their layers are not split).
    """
    if cfg.encoder_custom or isinstance(obs_space, gym.spaces.Dict):
        what = f"--encoder_custom={cfg.encoder_custom}" if cfg.encoder_custom else "a Dict observation space"
        raise ConfigError(
            "rnn_before_mlp",
            f"{what} has no MLP layers surge can move after the RNN.",
            "pass --rnn_before_mlp=False (the RNN then runs after the whole encoder).",
        )
    shape = tuple(obs_space.shape or ())
    if len(shape) == 3 and cfg.encoder_type != "mlp":
        return [int(cfg.hidden_size)] * int(cfg.encoder_extra_fc_layers)
    return mlp_sizes(cfg)


def make_trunk(cfg: Config, obs_space: gym.Space) -> Encoder:
    """`make_encoder`'s encoder without its fully connected layers (`fc_sizes_after_trunk`):
    `[B, *obs_shape]` -> `[B, out_size]` (the flattened observation, or the conv output).

    Raises:
        ConfigError: as `fc_sizes_after_trunk`.
    """
    fc_sizes_after_trunk(cfg, obs_space)
    shape = tuple(obs_space.shape or ())
    if len(shape) == 3 and cfg.encoder_type != "mlp":
        return make_encoder(dataclasses.replace(cfg, encoder_extra_fc_layers=0), obs_space)
    return MlpEncoder(shape, [], ACTIVATIONS[cfg.nonlinearity])
