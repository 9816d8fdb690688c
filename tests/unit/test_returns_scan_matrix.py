"""`reverse_scan_matrix` (the estimators' recurrence off the CPU: a cumprod table and one reduction)
against a naive float64 loop over the recurrence `y_t = x_t + coef_t · y_{t+1}`, values and
gradients, with episode ends (zeros in coef) and trailing dimensions; and its launches: a constant
number of operations whatever T, where the loop makes 3 per step."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from surge.learning.returns import _reverse_scan_loop, reverse_scan_matrix


def _naive(x, coef, init):
    T = x.shape[0]
    y = [None] * T
    acc = init.expand_as(x[0]).clone()
    for t in range(T - 1, -1, -1):
        acc = x[t] + coef[t] * acc
        y[t] = acc
    return torch.stack(y)


def _inputs(T, shape, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, *shape, generator=g, dtype=dtype) * 3
    # discounts in [0, 1), with episode ends (0) about one step in five
    coef = torch.rand(T, *shape, generator=g, dtype=dtype) * (torch.rand(T, *shape, generator=g) > 0.2)
    init = torch.randn(*shape, generator=g, dtype=dtype)
    return x, coef, init


@pytest.mark.parametrize("T,shape", [(1, (3,)), (2, (1,)), (7, (5,)), (32, (32,)), (64, (4,)), (16, (3, 2))])
def test_values_match_the_naive_recurrence(T, shape):
    for seed in range(3):
        x, coef, init = _inputs(T, shape, seed)
        torch.testing.assert_close(
            reverse_scan_matrix(x, coef, init), _naive(x, coef, init), rtol=1e-12, atol=1e-12
        )


def test_float32_stays_within_rounding_of_the_float64_reference():
    x, coef, init = _inputs(32, (64,), 7)
    ref = _naive(x, coef, init)
    got = reverse_scan_matrix(x.float(), coef.float(), init.float())
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), ref, rtol=1e-5, atol=1e-5)


def test_gradients_match_the_naive_recurrence():
    x, coef, init = _inputs(12, (5,), 3)
    w = torch.randn(12, 5, dtype=torch.float64)
    grads = []
    for fn in (reverse_scan_matrix, _naive):
        xs = [t.clone().requires_grad_() for t in (x, coef, init)]
        (fn(*xs) * w).sum().backward()
        grads.append([t.grad for t in xs])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


class _CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not getattr(func, "is_view", False):
            self.n += 1
        return func(*args, **(kwargs or {}))


def _ops(fn, T):
    x, coef, init = _inputs(T, (8,), 0, torch.float32)
    with _CountOps() as c:
        fn(x, coef, init)
    return c.n


def test_operations_do_not_grow_with_the_number_of_steps():
    # a T's first call also makes its triangular masks (kept for the next calls)
    first = [_ops(reverse_scan_matrix, T) for T in (4, 32, 128)]
    matrix = [_ops(reverse_scan_matrix, T) for T in (4, 32, 128)]
    loop = [_ops(_reverse_scan_loop, T) for T in (4, 32, 128)]
    assert matrix[0] == matrix[1] == matrix[2] <= 9
    assert all(f <= m + 3 for f, m in zip(first, matrix, strict=True))
    assert loop == [3 * T + 1 for T in (4, 32, 128)]  # empty_like, then a mul, an add, a copy per step
