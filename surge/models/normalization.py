"""Running mean and variance (Chan et al. 1979 parallel algorithm) as a module with buffers,
so it is saved in checkpoints with the model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, cast

import gymnasium as gym
import torch
from torch import Tensor, nn


class RunningMeanStd(nn.Module):
    """Tracks mean and variance of `[N, *shape]` float samples; `forward` normalises and clips.

    Args:
        shape: per-sample shape.
        epsilon: variance floor, added to the variance before the square root.
        clip: normalised values are clipped to [-clip, clip].
        prior_count: the statistics start as this many pseudo-samples of mean 0 and variance 1
            (1, as Sample Factory 2 and rl_games: early on, features that barely vary are damped
            rather than blown up to the clip).
    """

    #: a data-parallel run's combination of a batch's moments over the ranks,
    #: `(n, mean, var) -> (n, mean, var)` of all ranks' batches together (set by
    #: `surge.runtime.data_parallel.DataParallel` in the learning process; None: one process)
    reduce_moments: ClassVar[Callable[[int, Tensor, Tensor], tuple[int, Tensor, Tensor]] | None] = None

    #: keep the derived statistics (`derived`) in the same tensors when they are recomputed: a
    #: captured CUDA graph reads them at fixed addresses (set by `surge.sampling.graphed_act` on an
    #: inference worker's model, whose forward passes keep no autograd graph that a copy would spoil)
    derive_in_place: bool = False

    # the buffers registered in __init__ (float64; `mean` and `var` of `shape`, `count` a scalar)
    mean: Tensor
    var: Tensor
    count: Tensor

    def __init__(
        self, shape: tuple[int, ...], epsilon: float = 1e-5, clip: float = 5.0, prior_count: float = 1.0
    ):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(prior_count, dtype=torch.float64))
        self.epsilon, self.clip = epsilon, clip
        self._derived_key: tuple[int, ...] | None = None
        self._count_seen: tuple[int, int, float] = (-1, 0, 0.0)  # (version, data_ptr, value)
        self._derived: tuple[Tensor, Tensor] = (torch.empty(0), torch.empty(0))

    def _stats_key(self) -> tuple[int, ...]:
        """Changes whenever `mean` or `var` may have: their tensors' in-place version counters
        (`update`, `load_state_dict` and the async placement's weight loading all write them in
        place, through the buffers or views sharing their counter) and storages (`.to()`)."""
        m, v = self.mean, self.var
        return (m._version, v._version, m.data_ptr(), v.data_ptr())

    def derived(self) -> tuple[Tensor, Tensor]:
        """float32 `(mean, sqrt(var + eps))`, recomputed only when the statistics changed: an
        inference pass on a few observations would otherwise spend most of the normaliser's time
        converting the float64 statistics. With `derive_in_place` a recomputation is copied into
        the tensors returned before (same shapes and device), so their addresses stay."""
        key = self._stats_key()
        if key != self._derived_key:
            with torch.no_grad():
                fresh, old = self._derive(), self._derived
                if self.derive_in_place and all(
                    o.shape == f.shape and o.device == f.device for o, f in zip(old, fresh, strict=True)
                ):
                    for o, f in zip(old, fresh, strict=True):
                        o.copy_(f)
                else:
                    self._derived = fresh
            self._derived_key = key
        return self._derived

    def _derive(self) -> tuple[Tensor, Tensor]:
        return self.mean.float(), (self.var.float() + self.epsilon).sqrt()

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        """Folds a batch `[N, *shape]` into the statistics (parallel variance, Chan et al. 1979)."""
        x = x.detach().reshape(-1, *self.mean.shape)
        n = x.shape[0]
        reduce = RunningMeanStd.reduce_moments
        if n == 0 and reduce is None:
            return
        if n:
            # batch moments in float32 (images: no float64 copy of the whole batch), folded in float64.
            # Two passes (mean, then the mean square deviation) rather than torch.var_mean(dim=0), which
            # on CPU took 5-10x as long: 45.0 vs 8.8 ms for [256, 4·84·84], 0.40 vs 0.04 ms for [4096, 17]
            x = x.float()
            b_mean = x.mean(0)
            b_var = (x - b_mean).square_().mean(0).double()
            b_mean = b_mean.double()
        else:  # this rank has no sample, the others may: it still takes part in the reduction
            b_mean, b_var = torch.zeros_like(self.mean), torch.zeros_like(self.var)
        if reduce is not None:  # every rank folds in the same moments: all ranks' batches
            n, b_mean, b_var = reduce(n, b_mean, b_var)
            if n == 0:
                return
        # the fold's weights are host scalars (the count known without reading the device): six
        # operations where tensor arithmetic on the count made sixteen, each a kernel on a GPU
        count = self._host_count()
        total = count + n
        delta = b_mean - self.mean
        self.mean.add_(delta, alpha=n / total)
        # var' = (var·count + b_var·n + delta²·count·n/total) / total
        self.var.mul_(count / total).add_(b_var, alpha=n / total).addcmul_(
            delta, delta, value=count * n / total**2
        )
        self.count.fill_(total)
        self._count_seen = (self.count._version, self.count.data_ptr(), total)

    def _host_count(self) -> float:
        """`count` as a Python float: remembered from this module's own last update, read from the
        buffer (a device read, a sync on a GPU) only after something else wrote it (a checkpoint or
        shared-weights load, `.to()`), as its version counter and storage tell."""
        version, ptr, value = self._count_seen
        if (self.count._version, self.count.data_ptr()) != (version, ptr):
            value = float(self.count)
            self._count_seen = (self.count._version, self.count.data_ptr(), value)
        return value

    def forward(self, x: Tensor) -> Tensor:
        """`(x - mean) / sqrt(var + eps)` clipped, as float32, same shape as `x`."""
        mean, std = self.derived()
        return ((x.float() - mean) / std).clamp(-self.clip, self.clip)

    def denormalize(self, x: Tensor) -> Tensor:
        """Inverse of the normalisation (without clipping): `x · sqrt(var + eps) + mean`."""
        mean, std = self.derived()
        return x * std + mean


def float_copy(x: Tensor) -> Tensor:
    """`x` as a float32 tensor of its own (same shape), safe to modify in place: the uint8 -> float
    conversion when there is one, else a clone."""
    z = x.float()
    return z.clone() if z.data_ptr() == x.data_ptr() else z


def scale_pixels(x: Tensor, subtract_mean: float = 0.0, inv_scale: float = 1.0) -> Tensor:
    """`(x - subtract_mean) * inv_scale` as float32 (same shape; pixels of uint8 or float images),
    in place on a copy of our own; `x` is left as it is."""
    if not subtract_mean and inv_scale == 1.0:
        return x.float()
    z = float_copy(x)
    if subtract_mean:
        z.sub_(subtract_mean)
    return z.mul_(inv_scale) if inv_scale != 1.0 else z


class ImageNormalizer(RunningMeanStd):
    """Per-pixel running standardisation of image observations (Sample Factory 2's
    `normalize_input` on images): `x` `[N, C, H, W]` (uint8 or float) becomes
    `((x - subtract_mean) / scale - mean) / sqrt(var + eps)` clipped to ±5, float32, with the
    statistics kept on the scaled pixels (Sample Factory applies `obs_subtract_mean` and `obs_scale`
    first, so its prior and variance floor act on [0, 1] pixels). It takes over the encoder's
    scaling: the model builds its image encoders with scale 1 when this normaliser is on."""

    def __init__(self, shape: tuple[int, ...], subtract_mean: float = 0.0, scale: float = 1.0):
        super().__init__(shape)
        self.subtract_mean, self.inv_scale = float(subtract_mean), 1.0 / float(scale)

    #: statistics come from at most this many samples of a batch (an even stride over it): the
    #: full update cost 16% of the learner's time on doom_basic (py-spy), this one a quarter of it
    #: (both measured with torch.var_mean; the two-pass moments now make an update ~5x cheaper still)
    max_update_samples = 256

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        x = x.reshape(-1, *self.mean.shape)
        stride = -(-x.shape[0] // self.max_update_samples)
        super().update(scale_pixels(x[::stride] if stride > 1 else x, self.subtract_mean, self.inv_scale))

    def forward(self, x: Tensor) -> Tensor:
        # ((x - sub) / scale - mean) / std folded into (x - (sub + mean·scale)) · (1 / (scale·std)):
        # one float copy and two in-place passes before the clip, per inference step and batch
        offset, factor = self.derived()
        return float_copy(x).sub_(offset).mul_(factor).clamp_(-self.clip, self.clip)

    def _derive(self) -> tuple[Tensor, Tensor]:
        """`(offset, factor)` of `forward` (not the base class's mean and std)."""
        offset = self.mean.float() / self.inv_scale + self.subtract_mean
        return offset, (self.var.float() + self.epsilon).rsqrt() * self.inv_scale

    def denormalize(self, x: Tensor) -> Tensor:
        """`x · sqrt(var + eps) + mean`, on the scaled pixels the statistics are kept on."""
        return x * (self.var.float() + self.epsilon).sqrt() + self.mean.float()


class DictNormalizer(nn.Module):
    """One normaliser per key of a Dict observation; keys it does not hold pass through.

    An observation is `{key: Tensor [N, *shape]}`, or for a Dict nested in the Dict a dict of
    those: its values are typed `Any` because the nesting is the space's.
    """

    def __init__(self, normalizers: dict[str, RunningMeanStd | DictNormalizer]):
        super().__init__()
        self.normalizers = nn.ModuleDict(normalizers)

    @torch.no_grad()
    def update(self, obs: dict[str, Any]) -> None:
        for k, n in self.normalizers.items():
            # ModuleDict's values are typed Module; __init__ took normalisers (a string: no union built)
            cast("RunningMeanStd | DictNormalizer", n).update(obs[k])

    def forward(self, obs: dict[str, Any]) -> dict[str, Any]:
        return {k: self.normalizers[k](v) if k in self.normalizers else v for k, v in obs.items()}


def make_obs_normalizer(
    space: gym.Space, subtract_mean: float = 0.0, scale: float = 1.0
) -> RunningMeanStd | DictNormalizer | None:
    """The input normaliser of `normalize_input` for `space`: vectors (1-D Box) standardised,
    images (Box with ≥ 2 dims) scaled by `(x - subtract_mean) / scale` (`obs_subtract_mean`,
    `obs_scale`) and standardised per pixel (`ImageNormalizer`), a Dict per key.
    None for spaces with nothing to normalise."""
    if isinstance(space, gym.spaces.Dict):
        parts: dict[str, RunningMeanStd | DictNormalizer] = {}
        for k, s in space.spaces.items():
            n = make_obs_normalizer(s, subtract_mean, scale)
            if n is not None:
                parts[k] = n
        return DictNormalizer(parts) if parts else None
    if isinstance(space, gym.spaces.Box):
        shape = tuple(space.shape)
        return RunningMeanStd(shape) if len(shape) == 1 else ImageNormalizer(shape, subtract_mean, scale)
    return None
