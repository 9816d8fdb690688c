"""The learner's minibatch gather (`_columns`): the units `idx` of `[L, units, ...]` tensors, equal
to advanced indexing `x[:, idx]` (the reference) on both of its paths, and a tensor of its own."""

import pytest
import torch

from surge.algorithms.appo.learner import _ROW_GATHER_MIN, _columns


@pytest.mark.parametrize(
    "shape,dtype",
    [
        ((32, 12), torch.float32),  # [L, units]: advanced indexing
        ((1, 12, 4), torch.float32),  # small rows (vector observations): advanced indexing
        ((5, 12, 4, 21, 21), torch.uint8),  # image rows: index_select on the units dimension
        ((5, 12, _ROW_GATHER_MIN), torch.float32),
    ],
)
def test_columns_equal_advanced_indexing(shape, dtype):
    g = torch.Generator().manual_seed(0)
    full = (torch.rand((shape[1], shape[0] + 1, *shape[2:]), generator=g) * 250).to(dtype)
    x = full.transpose(0, 1)[: shape[0]]  # the learner's layout: a time-major view of [N, T+1, ...]
    idx = torch.tensor([7, 2, 11, 2, 0])
    got = _columns(idx)(x)
    expected = x[:, idx]
    assert got.shape == expected.shape and got.dtype == dtype and torch.equal(got, expected)
    assert got.is_contiguous()
    assert got.untyped_storage().data_ptr() != full.untyped_storage().data_ptr()  # a copy of its own
