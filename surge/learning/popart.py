"""PopArt's output-preserving update of the value head (van Hasselt et al. 2016, "Learning values
across many orders of magnitude", section 2, eq. 6-7; "ART": Adaptively Rescaling Targets,
"Pop": Preserving Outputs Precisely).

With `--normalize_returns` the critic predicts returns standardised by running statistics
(mean mu, std sigma); its value in return units is `sigma * (W h + b) + mu`. When a batch moves the
statistics to (mu', sigma'), every value in return units moves with them unless the last layer is
rescaled:

    W' = W * sigma / sigma'        b' = (sigma * b + mu - mu') / sigma'

so that `sigma' * (W' h + b') + mu' == sigma * (W h + b) + mu` for every input h. Without it, a
change of the statistics shifts the critic's baseline for every state at once: in A2C's n-step
returns the shift enters every advantage and every bootstrapped target (docs/logs/a2c_stability_2026-11-25.md).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


@torch.no_grad()
def preserve_outputs(head: nn.Linear, mean0: Tensor, std0: Tensor, mean1: Tensor, std1: Tensor) -> None:
    """Rescales `head` (the critic's last layer, `[out, in]` weight and `[out]` bias, float32) in
    place so that its outputs denormalised with (mean1, std1) equal those denormalised with
    (mean0, std0) before the call (eq. 6-7 above). The statistics are scalars (0-d float32 tensors;
    std = sqrt(var + eps), as `RunningMeanStd` normalises)."""
    head.weight.mul_(std0 / std1)
    head.bias.copy_((std0 * head.bias + mean0 - mean1) / std1)
