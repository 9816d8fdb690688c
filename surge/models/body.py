"""The trunk of one actor-critic stream: encoder -> core (GRU/LSTM/none) -> post-core layers.

The post-core layers exist only when a flag asks for them (rl_games' `A2CBuilder.Network`, rnn
options): `--rnn_layer_norm` puts a LayerNorm on the RNN's output, `--rnn_before_mlp` moves the
encoder's fully connected layers after the RNN (the RNN then reads the flattened observation or the
conv output), `--rnn_concat_input` feeds the RNN the MLP's output and the observation side by side. With neither, the body is today's encoder and core, with today's parameter names.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
from torch import nn

from surge.cfg.config import Config
from surge.errors import ConfigError
from surge.models.cores import Core, make_core
from surge.models.encoders import (
    ACTIVATIONS,
    ConcatInput,
    Encoder,
    MlpEncoder,
    _mlp,
    fc_sizes_after_trunk,
    make_encoder,
    make_trunk,
)


@dataclass
class Body:
    """encoder `[B, *obs] -> [B, encoder.out_size]`; core (`step`, `sequence`, `state_size`);
    post `[..., core.out_size] -> [..., out_size]` or None (identity)."""

    encoder: Encoder
    core: Core
    post: nn.Module | None
    out_size: int


def make_body(cfg: Config, obs_space: gym.Space, extra_in: int = 0) -> Body:
    """The encoder, core and post-core layers for `cfg` (see the module's docstring); the core
    reads `extra_in` features besides the encoder's (`--use_prev_action_reward`'s A + 1,
    concatenated by the caller).

    Raises:
        ConfigError: `rnn_before_mlp` with a custom encoder or a Dict observation space;
            `rnn_concat_input` with an encoder other than the MLP of a vector observation (the
            other combinations are refused by `surge.models.model_checks.check_model_flags`).
    """
    before_mlp = bool(getattr(cfg, "rnn_before_mlp", False))
    encoder = make_trunk(cfg, obs_space) if before_mlp else make_encoder(cfg, obs_space)
    if getattr(cfg, "rnn_concat_input", False):
        if before_mlp or not isinstance(encoder, MlpEncoder) or not isinstance(obs_space, gym.spaces.Box):
            raise ConfigError(
                "rnn_concat_input",
                f"concatenates a vector observation to the MLP encoder's output; {obs_space} with "
                f"{type(encoder).__name__}{' and --rnn_before_mlp' if before_mlp else ''} has none.",
                "pass --rnn_concat_input=False.",
            )
        encoder = ConcatInput(encoder, tuple(obs_space.shape))
    core = make_core(
        cfg.use_rnn, encoder.out_size + extra_in, cfg.hidden_size, cfg.rnn_type, cfg.rnn_num_layers
    )
    out_size = core.out_size
    post: list[nn.Module] = []
    if getattr(cfg, "rnn_layer_norm", False):
        post.append(nn.LayerNorm(out_size))
    if before_mlp:
        sizes = fc_sizes_after_trunk(cfg, obs_space)
        mlp, out_size = _mlp(
            out_size, sizes, ACTIVATIONS[cfg.nonlinearity], cfg.use_spectral_norm, getattr(cfg, "d2rl", False)
        )
        post.append(mlp)
    return Body(encoder, core, nn.Sequential(*post) if post else None, out_size)
