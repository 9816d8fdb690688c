"""Named weight initialisations for `--policy_initialization` (rl_games' `initializer: name:` values,
`algos_torch/network_builder.py` BaseNetwork.init_factory, under surge's names).

| rl_games name                          | surge policy_initialization | policy_init_gain       |
|----------------------------------------|-----------------------------|------------------------|
| default                                | torch_default               | (unused)               |
| orthogonal_initializer / orthogonal    | orthogonal                  | gain                   |
| glorot_uniform_initializer             | xavier_uniform              | gain (default 1)       |
| glorot_normal_initializer              | xavier_normal               | gain (default 1)       |
| kaiming_normal                         | kaiming_normal              | 1 (torch's defaults)   |
| variance_scaling_initializer (scale s) | variance_scaling            | sqrt(s) (s=2: 1.414)   |
| random_uniform_initializer (a=-g, b=g) | uniform                     | g                      |
| const_initializer                      | not a weight init here      | sigma_init: see initial_stddev |
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn


def _kaiming_normal(w: Tensor, gain: float) -> None:
    """He et al. 2015, eq. 10: N(0, 2 / fan_in), std scaled by `gain` (torch's kaiming_normal_
    with its defaults when gain = 1)."""
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    with torch.no_grad():
        w.mul_(gain)


def _variance_scaling(w: Tensor, gain: float) -> None:
    """rl_games' `torch_ext.variance_scaling_initializer` (mode fan_in): N(0, std²) with std =
    gain / sqrt(fan_in) (rl_games' scale = gain**2), truncated to [-2, 2] as rl_games'
    `sample_truncated_normal` does (absolute bounds, not 2 std)."""
    fan_in = nn.init._calculate_correct_fan(w, "fan_in")
    nn.init.trunc_normal_(w, 0.0, gain / math.sqrt(fan_in), -2.0, 2.0)


#: name -> fn(weight, gain), in place
WEIGHT_INITS: dict[str, Callable[[Tensor, float], object]] = {
    "orthogonal": lambda w, g: nn.init.orthogonal_(w, gain=g),
    "xavier_uniform": lambda w, g: nn.init.xavier_uniform_(w, gain=g),
    "xavier_normal": lambda w, g: nn.init.xavier_normal_(w, gain=g),
    "kaiming_normal": _kaiming_normal,
    "variance_scaling": _variance_scaling,
    "uniform": lambda w, g: nn.init.uniform_(w, -g, g),
}


def init_weight(weight: Tensor, name: str, gain: float) -> None:
    """Initialises `weight` (any shape with fan-in, e.g. `[out, in]` or `[out, in, kh, kw]`) in place
    with the named scheme of `WEIGHT_INITS`.

    Raises:
        KeyError: `name` is not in `WEIGHT_INITS` (torch_default is handled by the caller).
    """
    WEIGHT_INITS[name](weight, gain)
