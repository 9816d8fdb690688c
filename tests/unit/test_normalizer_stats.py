"""The observation and returns normalisers cache their float32 statistics between changes: every way
the statistics change (an update, a checkpoint load, the async placement's weight loading, a move
to another device or dtype) must show in the next forward pass. Expected values are the formulas
computed from the float64 buffers directly."""

import torch
from torch import nn

from surge.models.normalization import ImageNormalizer, RunningMeanStd
from surge.runtime.shared_state import SharedWeights


def _plain(norm: RunningMeanStd, x: torch.Tensor) -> torch.Tensor:
    """The normalisation recomputed from the buffers, without any cache."""
    if isinstance(norm, ImageNormalizer):
        z = x.float() * norm.inv_scale - norm.subtract_mean * norm.inv_scale
    else:
        z = x.float()
    std = (norm.var.float() + norm.epsilon).sqrt()
    return ((z - norm.mean.float()) / std).clamp(-norm.clip, norm.clip)


def _vector() -> tuple[RunningMeanStd, torch.Tensor]:
    torch.manual_seed(0)
    return RunningMeanStd((3,)), torch.randn(16, 3) * 4 + 2


def _image() -> tuple[ImageNormalizer, torch.Tensor]:
    torch.manual_seed(0)
    return ImageNormalizer((2, 3, 3), scale=255.0), torch.randint(0, 256, (8, 2, 3, 3), dtype=torch.uint8)


def test_forward_follows_each_update():
    for norm, x in (_vector(), _image()):
        norm(x)  # caches the prior's statistics
        for _ in range(3):
            norm.update(x[:4] if isinstance(norm, ImageNormalizer) else x * 2)
            torch.testing.assert_close(norm(x), _plain(norm, x), rtol=1e-5, atol=1e-5)


def test_forward_follows_a_state_dict_load_and_a_shared_weights_load():
    for make in (_vector, _image):
        src, x = make()
        dst, _ = make()
        src.update(x)
        dst(x)  # dst caches its prior
        dst.load_state_dict(src.state_dict())
        torch.testing.assert_close(dst(x), src(x))
        src.update(x[:2] * 3 if not isinstance(src, ImageNormalizer) else x[:2])
        holder_src, holder_dst = nn.ModuleList([src]), nn.ModuleList([dst])
        weights = SharedWeights(holder_src)
        weights.publish(holder_src, policy_version=1)
        assert weights.load_into(holder_dst) == 1
        torch.testing.assert_close(dst(x), src(x))
        torch.testing.assert_close(dst(x), _plain(dst, x), rtol=1e-5, atol=1e-5)


def test_returns_denormalize_follows_updates():
    norm = RunningMeanStd((), clip=1e9)
    v = torch.tensor([0.5, -1.0])
    norm.denormalize(v)
    norm.update(torch.tensor([10.0, 12.0, 20.0]))
    expected = v * (norm.var.float() + norm.epsilon).sqrt() + norm.mean.float()
    torch.testing.assert_close(norm.denormalize(v), expected)


def test_forward_follows_a_dtype_move():
    norm, x = _vector()
    norm.update(x)
    norm(x)
    norm.double()
    norm.var.mul_(4.0)
    torch.testing.assert_close(norm(x), _plain(norm, x), rtol=1e-5, atol=1e-5)


def test_an_update_after_a_load_folds_into_the_loaded_count():
    # the update weighs the batch by the count it knows on the host; a count written by a load
    # (checkpoint or shared weights) must be the one it folds into, not the one it last wrote
    torch.manual_seed(0)
    a, b = torch.randn(50, 3) * 2 + 1, torch.randn(30, 3) - 4
    src, dst = RunningMeanStd((3,)), RunningMeanStd((3,))
    for _ in range(3):
        src.update(a)  # count 151
    dst.update(b)  # dst's own count: 31
    dst.load_state_dict(src.state_dict())
    dst.update(b)
    # reference: one pass over the prior pseudo-sample and every batch (Chan et al.'s fold is exact)
    x = torch.cat([a, a, a, b]).double()
    n = x.shape[0]
    mean = x.sum(0) / (n + 1)
    var = (1 + (x - mean).pow(2).sum(0) + mean.pow(2)) / (n + 1)
    assert float(dst.count) == n + 1
    torch.testing.assert_close(dst.mean, mean, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(dst.var, var, rtol=1e-5, atol=1e-5)
