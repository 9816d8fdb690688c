"""C51's projection (Bellemare et al. 2017, Algorithm 1) against a naive per-atom loop, and its loss."""

import math

import pytest
import torch

from surge.algorithms.dqn.categorical import (
    categorical_loss,
    categorical_projection,
    categorical_q_values,
    categorical_support,
    select_next_probs,
)


def _naive_projection(p, returns, discounts, v_min, v_max):
    """Algorithm 1 one atom at a time, in float64; `b` on an atom gives its whole mass to it."""
    B, N = p.shape
    dz = (v_max - v_min) / (N - 1)
    m = [[0.0] * N for _ in range(B)]
    for i in range(B):
        for j in range(N):
            zj = v_min + j * dz
            tz = min(max(float(returns[i]) + float(discounts[i]) * zj, v_min), v_max)
            b = (tz - v_min) / dz
            lo, up = math.floor(b), math.ceil(b)
            pj = float(p[i, j])
            if lo == up:
                m[i][lo] += pj
            else:
                m[i][lo] += pj * (up - b)
                m[i][up] += pj * (b - lo)
    return torch.tensor(m, dtype=torch.float64)


def test_projection_matches_a_naive_per_atom_loop_with_returns_outside_the_support():
    g = torch.Generator().manual_seed(0)
    B, N, v_min, v_max = 24, 51, -10.0, 10.0
    p = torch.softmax(torch.randn(B, N, generator=g), dim=1)
    returns = torch.randn(B, generator=g) * 8
    returns[0], returns[1], returns[2] = 25.0, -40.0, 9.9  # beyond both ends, near the top
    discounts = torch.full((B,), 0.99**3)
    discounts[3] = 0.0  # terminated: all mass on R
    m = categorical_projection(p, returns, discounts, v_min, v_max)
    ref = _naive_projection(p.double(), returns, discounts, v_min, v_max)
    torch.testing.assert_close(m.double(), ref, atol=2e-6, rtol=1e-5)
    assert m.sum(dim=1).tolist() == pytest.approx([1.0] * B, abs=1e-5)
    assert m[0, -1].item() == pytest.approx(1.0, abs=1e-5)  # all of it clipped to v_max
    assert m[1, 0].item() == pytest.approx(1.0, abs=1e-5)


def test_projection_keeps_all_mass_where_b_lands_exactly_on_an_atom():
    # support 0, 1, 2, 3, 4 (Δz = 1): integer returns with discount 1 or 0 land exactly on atoms
    p = torch.tensor([[0.1, 0.2, 0.3, 0.25, 0.15]] * 4)
    returns = torch.tensor([1.0, 0.0, 2.0, -1.0])
    discounts = torch.tensor([1.0, 1.0, 0.0, 1.0])
    m = categorical_projection(p, returns, discounts, 0.0, 4.0)
    ref = _naive_projection(p.double(), returns, discounts, 0.0, 4.0)
    torch.testing.assert_close(m.double(), ref)
    assert m[0].tolist() == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])  # shifted by one, top clipped
    assert m[1].tolist() == pytest.approx(p[0].tolist())  # identity
    assert m[2].tolist() == pytest.approx([0.0, 0.0, 1.0, 0.0, 0.0])
    assert m[3].tolist() == pytest.approx([0.3, 0.3, 0.25, 0.15, 0.0])


def test_projection_preserves_the_mean_inside_the_support():
    # linear interpolation onto neighbouring atoms keeps E[z]: Σ m_i z_i = R + d·Σ p_j z_j
    g = torch.Generator().manual_seed(2)
    p = torch.softmax(torch.randn(8, 21, generator=g), dim=1).double()
    returns = torch.rand(8, generator=g).double() * 0.5
    discounts = torch.full((8,), 0.5, dtype=torch.float64)
    z = categorical_support(-10.0, 10.0, 21).double()
    m = categorical_projection(p, returns, discounts, -10.0, 10.0)
    torch.testing.assert_close(m @ z, returns + discounts * (p @ z))


def test_loss_is_the_cross_entropy_and_kl_the_priorities():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(5, 11, generator=g, requires_grad=True)
    target = torch.softmax(torch.randn(5, 11, generator=g), dim=1)
    w = torch.tensor([1.0, 0.5, 0.5, 2.0, 1.0])
    out = categorical_loss(torch.log_softmax(logits, dim=1), target, w)
    p = torch.softmax(logits.detach(), dim=1)
    ce_ref = [-sum(float(target[i, k]) * math.log(float(p[i, k])) for k in range(11)) for i in range(5)]
    kl_ref = [
        sum(float(target[i, k]) * math.log(float(target[i, k] / p[i, k])) for k in range(11))
        for i in range(5)
    ]
    assert out.cross_entropy.tolist() == pytest.approx(ce_ref, rel=1e-5)
    assert out.kl.tolist() == pytest.approx(kl_ref, rel=1e-4, abs=1e-6)
    assert out.loss.item() == pytest.approx(
        sum(c * float(wi) for c, wi in zip(ce_ref, w, strict=True)) / 5, rel=1e-5
    )
    out.loss.backward()
    # d CE / d logits = w·(softmax − m) / B
    torch.testing.assert_close(logits.grad, (w[:, None] * (p - target)) / 5)


def test_q_values_and_greedy_next_distribution():
    z = categorical_support(-1.0, 1.0, 3)
    probs = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], [[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]])
    q = categorical_q_values(probs, z)
    assert q.tolist() == [[-1.0, 1.0], [0.0, 0.0]]
    chosen = select_next_probs(probs, torch.tensor([[0.0, 1.0], [2.0, -1.0]]))
    assert chosen.tolist() == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]


def test_support_refuses_bad_bounds():
    with pytest.raises(ValueError, match="v_min"):
        categorical_support(1.0, 1.0, 51)
    with pytest.raises(ValueError, match="v_min"):
        categorical_support(float("-inf"), 1.0, 51)
    with pytest.raises(ValueError, match="atoms"):
        categorical_support(0.0, 1.0, 1)
