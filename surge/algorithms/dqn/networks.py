"""The Q-network of the DQN family and R2D2: surge's encoder -> optional recurrent core (GRU/LSTM,
`surge.models.cores`) -> a plain, dueling (Wang et al. 2016) or categorical (C51, Bellemare et al.
2017) head, or dueling and categorical together (Rainbow, Hessel et al. 2018).

Discrete actions only (A = `action_space.n`). The recurrent state is stored flat `[B, state_size]`
float32 as `ActorCritic` stores it (`state_size` 0 without a core).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, cast

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.algorithms.dqn.categorical import categorical_support
from surge.cfg.config import Config
from surge.envs.action_masks import model_obs_space
from surge.errors import EnvError
from surge.models.cores import IdentityCore, RnnCore, make_core
from surge.models.encoders import ACTIVATIONS, _mlp, mlp_sizes
from surge.models.obs_features import Obs, ObsFeatures


class QOutput(NamedTuple):
    """`q_values` `[*lead, A]` float32 (expected values for a categorical head); `log_probs`
    `[*lead, A, atoms]` log-softmax over atoms, or None; `rnn_states` `[B, state_size]` the state
    after the step (`forward`) or None (`sequence`); `action_mask` `[*lead, A]` or None."""

    q_values: Tensor
    log_probs: Tensor | None
    rnn_states: Tensor | None
    action_mask: Tensor | None


class _GradScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, scale: float) -> Tensor:
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        return grad * ctx.scale, None


def split_last_hidden_layer(cfg: Config, obs_space: gym.Space) -> tuple[Any, int | None]:
    """The encoder config without its last fully connected layer, and that layer's width: the
    dueling network's shared trunk and the hidden layer each of its two streams gets (Wang et al.
    2016, section 4: the Nature DQN's convolutions are shared, then a value and an advantage stream
    of one 512-unit layer each; rlpyt's `DuelingHeadModel` alike). Images: `--encoder_extra_fc_layers`
    minus one; vectors: `--encoder_mlp_layers` without the last. `(cfg, None)` (nothing to split:
    the streams stay linear on the whole encoder) for an encoder without such a layer, a custom
    encoder, a Dict observation, the `mlp_mujoco` subtype (fixed 64-64 layers) and `--d2rl` (whose
    layers each take the MLP's input, so the last one cannot leave it)."""
    space = model_obs_space(obs_space)
    if cfg.encoder_custom or not isinstance(space, gym.spaces.Box) or getattr(cfg, "d2rl", False):
        return cfg, None
    if len(space.shape or ()) == 3 and cfg.encoder_type != "mlp":
        n = int(cfg.encoder_extra_fc_layers)
        if n < 1:
            return cfg, None
        return dataclasses.replace(cfg, encoder_extra_fc_layers=n - 1), int(cfg.hidden_size)
    sizes = mlp_sizes(cfg)
    if not sizes or cfg.encoder_subtype == "mlp_mujoco":
        return cfg, None
    return dataclasses.replace(cfg, encoder_mlp_layers=sizes[:-1]), sizes[-1]


class QNetwork(nn.Module):
    """Q-values for a Discrete action space.

    Args:
        cfg: a surge `Config` (or an object with its encoder and core fields: `nonlinearity`,
            `encoder_*`, `hidden_size`, `obs_subtract_mean`, `obs_scale`, `normalize_input`,
            `use_spectral_norm`, `rnn_type`, `rnn_num_layers`).
        obs_space: the agent's observation space (an `action_mask` entry is split off and returned).
        action_space: `Discrete(A)`.
        dueling: the dueling network, `Q = V + A − mean_a A` (Wang et al. 2016, eq. 9), with the
            gradient entering the streams scaled by `dueling_grad_scale` (1/√2, their section 4.2).
            Without a core and with `head_sizes=()`, the encoder's last fully connected layer
            becomes the streams' own (`split_last_hidden_layer`): on Atari the convolutions are
            shared and each stream has a 512-unit layer, as in the paper (the cases it leaves
            unsplit are in its docstring). Elsewhere the streams have `head_sizes` hidden layers
            on the (core's) features.
        num_atoms: 1 for scalar Q-values; > 1 for a categorical head over `[v_min, v_max]`.
        head_sizes: hidden layers of the head (each stream of a dueling head); () maps the
            features straight to the outputs (the encoder's last layer is then the hidden one, as
            the Nature DQN's 512-unit layer with `encoder_extra_fc_layers=1`, `hidden_size=512`;
            a dueling head without a core moves that layer into its streams, see `dueling`).
        use_rnn: a recurrent core of `cfg.hidden_size` units (R2D2, Kapturowski et al. 2019).
    Raises:
        EnvError: a non-Discrete action space.
        ValueError: bad `num_atoms` or support.
    """

    support: Tensor

    def __init__(
        self,
        cfg: Config,
        obs_space: gym.Space,
        action_space: gym.Space,
        *,
        dueling: bool = False,
        num_atoms: int = 1,
        v_min: float = -10.0,
        v_max: float = 10.0,
        head_sizes: tuple[int, ...] = (),
        use_rnn: bool = False,
        dueling_grad_scale: float = 2**-0.5,
    ):
        super().__init__()
        if not isinstance(action_space, gym.spaces.Discrete):
            raise EnvError(f"QNetwork needs a Discrete action space, got {action_space}")
        if num_atoms < 1:
            raise ValueError(f"num_atoms must be >= 1, got {num_atoms}")
        self.num_actions, self.num_atoms = int(action_space.n), num_atoms
        self.dueling, self.dueling_grad_scale = dueling, dueling_grad_scale
        spectral = False  # a layer moved out of the encoder keeps its spectral normalisation
        if dueling and not use_rnn and not head_sizes:
            cfg, stream = split_last_hidden_layer(cfg, obs_space)
            head_sizes = (stream,) if stream is not None else ()
            spectral = stream is not None and bool(getattr(cfg, "use_spectral_norm", False))
        self.features = ObsFeatures(cfg, obs_space)
        self.core = cast(
            "IdentityCore | RnnCore",
            make_core(use_rnn, self.features.out_size, cfg.hidden_size, cfg.rnn_type, cfg.rnn_num_layers),
        )
        self.rnn_state_size: int = int(self.core.state_size)
        act = ACTIVATIONS[cfg.nonlinearity]
        self.head, h = _mlp(self.core.out_size, list(head_sizes), act, spectral)
        self.out = nn.Linear(h, self.num_actions * num_atoms)
        if dueling:
            self.value_head, hv = _mlp(self.core.out_size, list(head_sizes), act, spectral)
            self.value_out = nn.Linear(hv, num_atoms)
        if num_atoms > 1:
            self.register_buffer("support", categorical_support(v_min, v_max, num_atoms))
        self.to(memory_format=torch.channels_last)  # type: ignore[call-overload] # as ActorCritic: the conv encoders' input order

    def _q(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        lead = x.shape[:-1]
        if self.dueling:
            x = _GradScale.apply(x, self.dueling_grad_scale)
        adv = self.out(self.head(x)).view(*lead, self.num_actions, self.num_atoms)
        if self.dueling:
            value = self.value_out(self.value_head(x)).view(*lead, 1, self.num_atoms)
            adv = value + adv - adv.mean(dim=-2, keepdim=True)  # Wang et al. 2016, eq. 9
        if self.num_atoms == 1:
            return adv.squeeze(-1), None
        log_probs = torch.log_softmax(adv, dim=-1)
        return log_probs.exp() @ self.support, log_probs

    def initial_state(self, batch: int, device: torch.device | str = "cpu") -> Tensor:
        """Zeros `[batch, state_size]` float32."""
        return torch.zeros(batch, self.rnn_state_size, device=device)

    def forward(self, obs: Obs, rnn_states: Tensor | None = None) -> QOutput:
        """One step: obs `[B, *obs_shape]` (or a dict), rnn_states `[B, state_size]` (None = zeros)."""
        feats, mask = self.features(obs, lead_dims=1)
        if rnn_states is None:
            rnn_states = self.initial_state(feats.shape[0], feats.device)
        x, new_states = self.core.step(feats, rnn_states)
        q, log_probs = self._q(x)
        return QOutput(q, log_probs, new_states, mask)

    def sequence(self, obs: Obs, rnn_states: Tensor, dones: Tensor, burn_in: int = 0) -> QOutput:
        """Q-values over stored sequences, R2D2-style (Kapturowski et al. 2019, section 3).

        The core starts from the stored state `rnn_states[0]`, runs the first `burn_in` steps
        without gradient, then the rest with it; the state restarts from zeros after an episode end.

        Args:
            obs: `[T, B, *obs_shape]` (or a dict of them).
            rnn_states: `[T, B, state_size]` stored states; only row 0 is used.
            dones: `[T, B]` float32, 1 where the episode ended at step t (terminated or truncated).
            burn_in: steps (0 ≤ burn_in < T) that only warm the state up.
        Returns:
            QOutput over the `T − burn_in` remaining steps (`rnn_states` None).
        Raises:
            ValueError: burn_in outside [0, T).
        """
        first = next(iter(obs.values())) if isinstance(obs, dict) else obs
        T, B = int(first.shape[0]), int(first.shape[1])
        if not 0 <= burn_in < T:
            raise ValueError(f"burn_in must lie in [0, {T}), got {burn_in}")
        state = rnn_states[0]
        if burn_in > 0:
            with torch.no_grad():
                warm = _slice(obs, 0, burn_in)
                feats, _ = self.features(warm, lead_dims=2)
                for t in range(burn_in):
                    _, state = self.core.step(feats[t], state)
                    state = state * (1.0 - dones[t]).unsqueeze(1)
        rest = _slice(obs, burn_in, T)
        feats, mask = self.features(rest, lead_dims=2)
        n = T - burn_in
        x = self.core.sequence(feats, state.unsqueeze(0).expand(n, B, -1), dones[burn_in:], n)
        q, log_probs = self._q(x)
        return QOutput(q, log_probs, None, mask)


def _slice(obs: Obs, start: int, end: int) -> Obs:
    if isinstance(obs, dict):
        return {k: v[start:end] for k, v in obs.items()}
    return obs[start:end]
