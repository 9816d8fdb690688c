"""Running mean and variance (Chan et al. 1979 parallel algorithm) as a module with buffers,
so it is saved in checkpoints with the model."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class RunningMeanStd(nn.Module):
    """Tracks mean and variance of `[N, *shape]` float samples; `forward` normalises and clips.

    Args:
        shape: per-sample shape.
        epsilon: initial pseudo-count and variance floor.
        clip: normalised values are clipped to [-clip, clip].
    """

    def __init__(self, shape: tuple[int, ...], epsilon: float = 1e-5, clip: float = 5.0):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(epsilon, dtype=torch.float64))
        self.epsilon, self.clip = epsilon, clip

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        """Folds a batch `[N, *shape]` into the statistics (parallel variance, Chan et al. 1979)."""
        x = x.detach().double().reshape(-1, *self.mean.shape)
        n = x.shape[0]
        if n == 0:
            return
        b_mean, b_var = x.mean(0), x.var(0, unbiased=False)
        delta = b_mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        m2 = self.var * self.count + b_var * n + delta.pow(2) * self.count * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, x: Tensor) -> Tensor:
        """`(x - mean) / sqrt(var + eps)` clipped, as float32, same shape as `x`."""
        mean, std = self.mean.float(), (self.var.float() + self.epsilon).sqrt()
        return ((x.float() - mean) / std).clamp(-self.clip, self.clip)

    def denormalize(self, x: Tensor) -> Tensor:
        """Inverse of the normalisation (without clipping): `x · sqrt(var + eps) + mean`."""
        return x * (self.var.float() + self.epsilon).sqrt() + self.mean.float()
