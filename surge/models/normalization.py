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
        x = x.detach().reshape(-1, *self.mean.shape)
        n = x.shape[0]
        if n == 0:
            return
        # batch moments in one float32 pass (images: no float64 copy of the whole batch), folded in float64
        b_var, b_mean = torch.var_mean(x.float(), dim=0, unbiased=False)
        b_var, b_mean = b_var.double(), b_mean.double()
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


class ImageNormalizer(RunningMeanStd):
    """Per-pixel running standardisation of image observations (Sample Factory 2's
    `normalize_input` on images). It replaces the encoder's `(x - obs_subtract_mean) / obs_scale`
    (standardisation is invariant to that affine map), so the model builds its image encoders with
    scale 1 when this normaliser is on; `forward` is one float copy and three in-place passes."""

    #: statistics come from at most this many samples of a batch (an even stride over it): the
    #: full update cost 16% of the learner's time on doom_basic (py-spy), this one a quarter of it
    max_update_samples = 256

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        x = x.reshape(-1, *self.mean.shape)
        stride = -(-x.shape[0] // self.max_update_samples)
        super().update(x[::stride] if stride > 1 else x)

    def forward(self, x: Tensor) -> Tensor:
        z = x.float()
        if z.data_ptr() == x.data_ptr():
            z = z.clone()
        inv_std = (self.var.float() + self.epsilon).rsqrt()
        return z.sub_(self.mean.float()).mul_(inv_std).clamp_(-self.clip, self.clip)


class DictNormalizer(nn.Module):
    """One normaliser per key of a Dict observation; keys it does not hold pass through."""

    def __init__(self, normalizers: dict[str, nn.Module]):
        super().__init__()
        self.normalizers = nn.ModuleDict(normalizers)

    @torch.no_grad()
    def update(self, obs: dict[str, Tensor]) -> None:
        for k, n in self.normalizers.items():
            n.update(obs[k])

    def forward(self, obs: dict[str, Tensor]) -> dict[str, Tensor]:
        return {k: self.normalizers[k](v) if k in self.normalizers else v for k, v in obs.items()}


def make_obs_normalizer(space) -> nn.Module | None:
    """The input normaliser of `normalize_input` for `space`: vectors (1-D Box) standardised,
    images (Box with ≥ 2 dims) standardised per pixel (`ImageNormalizer`), a Dict per key.
    None for spaces with nothing to normalise."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Dict):
        parts = {k: make_obs_normalizer(s) for k, s in space.spaces.items()}
        parts = {k: n for k, n in parts.items() if n is not None}
        return DictNormalizer(parts) if parts else None
    if isinstance(space, gym.spaces.Box):
        shape = tuple(space.shape)
        return RunningMeanStd(shape) if len(shape) == 1 else ImageNormalizer(shape)
    return None
