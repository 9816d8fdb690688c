"""D2RL dense MLP (Sinha et al. 2020, "D2RL: Deep Dense Architectures in Reinforcement Learning",
sec. 3; rl_games' `algos_torch/d2rl.py` D2RLNet without normalisation layers)."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class D2RLMlp(nn.Module):
    """An MLP whose every layer after the first also sees the MLP's input:

        h_1 = act(W_1 x + b_1),   h_i = act(W_i [h_{i-1}, x] + b_i)   for i > 1,

    so layer i > 1 has `sizes[i-1] + in_size` inputs. With no sizes it is the identity.
    `spectral` wraps each Linear in spectral normalisation, as surge's plain MLP does.
    Input `[..., in_size]` float32 -> `[..., out_size]` (`out_size = sizes[-1]`, or `in_size`).
    """

    def __init__(self, in_size: int, sizes: list[int], act: type[nn.Module], spectral: bool = False):
        super().__init__()
        self.linears = nn.ModuleList()
        self.acts = nn.ModuleList()
        width = in_size
        for size in sizes:
            linear: nn.Module = nn.Linear(width, size)
            if spectral:
                linear = nn.utils.parametrizations.spectral_norm(linear)
            self.linears.append(linear)
            self.acts.append(act())
            width = size + in_size
        self.out_size = sizes[-1] if sizes else in_size

    def forward(self, x: Tensor) -> Tensor:
        h = x
        for i, (linear, act) in enumerate(zip(self.linears, self.acts, strict=True)):
            h = act(linear(h if i == 0 else torch.cat([h, x], dim=-1)))
        return h
