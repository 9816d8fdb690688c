"""DQN targets (n-step, max, double), the TD loss and R2D2's value rescaling, against naive loops
and the papers' formulas (not against our own output)."""

import math

import pytest
import torch

from surge.learning.q_learning import (
    double_q_target,
    inverse_value_rescale,
    nstep_returns,
    q_max_target,
    td_loss,
    value_rescale,
)


def _naive_nstep(rewards, terminated, truncated, gamma):
    B, n = rewards.shape
    out = []
    for i in range(B):
        g, disc, steps = 0.0, gamma**n, n
        for j in range(n):
            g += gamma**j * float(rewards[i, j])
            if terminated[i, j]:
                disc, steps = 0.0, j + 1
                break
            if truncated[i, j]:
                disc, steps = gamma ** (j + 1), j + 1
                break
        out.append((g, disc, steps))
    return out


def test_nstep_returns_match_a_naive_loop_with_terminations_and_truncations_kept_apart():
    g = torch.Generator().manual_seed(0)
    B, n, gamma = 64, 5, 0.97
    rewards = torch.randn(B, n, generator=g)
    terminated = torch.rand(B, n, generator=g) < 0.15
    truncated = (torch.rand(B, n, generator=g) < 0.15) & ~terminated
    terminated[0], truncated[0] = False, False  # a full window
    terminated[1, 0] = True  # ends at its first step
    truncated[2, :] = False
    terminated[2, :] = False
    truncated[2, 2] = True  # truncated mid-window: bootstraps with γ^3
    returns, discounts, steps = nstep_returns(rewards, terminated, truncated, gamma)
    for i, (g_ref, d_ref, s_ref) in enumerate(_naive_nstep(rewards, terminated, truncated, gamma)):
        assert returns[i].item() == pytest.approx(g_ref, rel=1e-5, abs=1e-6), i
        assert discounts[i].item() == pytest.approx(d_ref, rel=1e-6), i
        assert int(steps[i]) == s_ref, i
    assert discounts[2].item() == pytest.approx(gamma**3)
    assert discounts[1].item() == 0.0


def test_nstep_returns_refuse_a_discount_outside_0_1():
    with pytest.raises(ValueError, match="gamma"):
        nstep_returns(torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2), 1.5)


def test_max_and_double_q_targets_match_a_naive_loop_with_action_masks():
    g = torch.Generator().manual_seed(1)
    B, A = 32, 4
    q_online, q_target = torch.randn(B, A, generator=g), torch.randn(B, A, generator=g)
    returns = torch.randn(B, generator=g)
    discounts = torch.where(torch.rand(B, generator=g) < 0.2, 0.0, 0.99**3)
    mask = torch.rand(B, A, generator=g) < 0.7
    mask[:, 0] = True
    y_max = q_max_target(q_target, returns, discounts, mask)
    y_double = double_q_target(q_online, q_target, returns, discounts, mask)
    y_double_nomask = double_q_target(q_online, q_target, returns, discounts)
    for i in range(B):
        legal = [a for a in range(A) if mask[i, a]]
        best_target = max(float(q_target[i, a]) for a in legal)
        a_star = max(legal, key=lambda a: float(q_online[i, a]))
        a_any = max(range(A), key=lambda a: float(q_online[i, a]))
        r, d = float(returns[i]), float(discounts[i])
        assert y_max[i].item() == pytest.approx(r + d * best_target, abs=1e-6)
        assert y_double[i].item() == pytest.approx(r + d * float(q_target[i, a_star]), abs=1e-6)
        assert y_double_nomask[i].item() == pytest.approx(r + d * float(q_target[i, a_any]), abs=1e-6)


def test_targets_carry_no_gradient():
    q = torch.randn(4, 3, requires_grad=True)
    assert not q_max_target(q, torch.zeros(4), torch.ones(4)).requires_grad
    assert not double_q_target(q, q, torch.zeros(4), torch.ones(4)).requires_grad


def test_td_loss_huber_and_mse_with_importance_weights_match_the_formulas():
    q = torch.tensor([0.0, 1.0, -2.0, 5.0], requires_grad=True)
    y = torch.tensor([0.5, 3.0, -2.0, 1.0])
    w = torch.tensor([1.0, 0.5, 2.0, 0.25])

    def huber(x):  # Mnih et al. 2015: quadratic inside |x| <= 1, linear outside
        return 0.5 * x * x if abs(x) <= 1 else abs(x) - 0.5

    diffs = [float(a - b) for a, b in zip(y, q.detach(), strict=True)]
    expected = sum(float(wi) * huber(d) for wi, d in zip(w, diffs, strict=True)) / 4
    out = td_loss(q, y, w)
    assert out.loss.item() == pytest.approx(expected)
    assert out.abs_td_errors.tolist() == pytest.approx([abs(d) for d in diffs])
    assert not out.abs_td_errors.requires_grad
    mse = td_loss(q, y, None, kind="mse")
    assert mse.loss.item() == pytest.approx(sum(0.5 * d * d for d in diffs) / 4)
    mse.loss.backward()
    assert q.grad.tolist() == pytest.approx([-d / 4 for d in diffs])  # d/dq 0.5(y-q)^2 / B
    with pytest.raises(ValueError, match="kind"):
        td_loss(q, y, kind="l1")


def _paper_h(x: float, eps: float) -> float:
    return math.copysign(math.sqrt(abs(x) + 1) - 1, x) + eps * x


def _paper_h_inv(z: float, eps: float) -> float:  # Pohlen et al. 2018, Proposition A.2, as written
    return math.copysign(((math.sqrt(1 + 4 * eps * (abs(z) + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1, z)


def test_value_rescale_matches_the_paper_formula_and_its_closed_form_inverse():
    xs = [-1e5, -317.5, -3.0, -1e-3, 0.0, 2e-4, 0.5, 1.0, 42.0, 9e5]
    t = torch.tensor(xs, dtype=torch.float64)
    h = value_rescale(t)
    assert h.tolist() == pytest.approx([_paper_h(x, 1e-3) for x in xs], rel=1e-12, abs=1e-15)
    zs = h.tolist()
    inv = inverse_value_rescale(torch.tensor(zs, dtype=torch.float64))
    # the paper's form, in float64, as reference; it loses digits near 0, hence the abs tolerance
    assert inv.tolist() == pytest.approx([_paper_h_inv(z, 1e-3) for z in zs], rel=1e-9, abs=1e-8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("eps", [1e-3, 1e-2, 0.0])
def test_inverse_value_rescale_round_trips_to_1e_5_over_a_wide_range(dtype, eps):
    mags = torch.logspace(-6, 6, 2001, dtype=torch.float64)
    x = torch.cat([-mags.flip(0), torch.zeros(1, dtype=torch.float64), mags]).to(dtype)
    back = inverse_value_rescale(value_rescale(x, eps), eps)
    err = ((back - x).abs() / x.abs().clamp(min=1.0)).max().item()
    assert err <= 1e-5
    back_other = value_rescale(inverse_value_rescale(x, eps), eps)
    assert ((back_other - x).abs() / x.abs().clamp(min=1.0)).max().item() <= 1e-5
