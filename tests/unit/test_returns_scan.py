"""The estimators' backward recurrence (`reverse_scan`: numpy on the CPU) against the torch loops
they replaced, copied here as they were: the results must be bit-identical, not merely close."""

import pytest
import torch

from surge.learning.returns import discounted_returns, gae, reverse_scan, vtrace


def _old_gae(rewards, values, dones, gamma, lam):
    T = rewards.shape[0]
    not_done = 1.0 - dones
    deltas = rewards + gamma * not_done * values[1:] - values[:-1]
    adv = torch.empty_like(rewards)
    last = torch.zeros_like(rewards[0])
    discount = gamma * lam * not_done
    for t in range(T - 1, -1, -1):
        last = deltas[t] + discount[t] * last
        adv[t] = last
    return adv, adv + values[:-1]


def _old_vtrace(rewards, values, dones, log_rhos, gamma, rho_bar=1.0, c_bar=1.0):
    T = rewards.shape[0]
    rhos = log_rhos.exp()
    clipped_rhos = rhos.clamp(max=rho_bar)
    cs = rhos.clamp(max=c_bar)
    discounts = gamma * (1.0 - dones)
    deltas = clipped_rhos * (rewards + discounts * values[1:] - values[:-1])
    vs_minus_v = torch.empty_like(rewards)
    acc = torch.zeros_like(rewards[0])
    for t in range(T - 1, -1, -1):
        acc = deltas[t] + discounts[t] * cs[t] * acc
        vs_minus_v[t] = acc
    vs = vs_minus_v + values[:-1]
    vs_next = torch.cat([vs[1:], values[-1:]], dim=0)
    advantages = clipped_rhos * (rewards + discounts * vs_next - values[:-1])
    return vs, advantages


def _old_discounted_returns(rewards, dones, bootstrap, gamma):
    T = rewards.shape[0]
    out = torch.empty_like(rewards)
    g = bootstrap
    for t in range(T - 1, -1, -1):
        g = rewards[t] + gamma * (1.0 - dones[t]) * g
        out[t] = g
    return out


def _batch(T, B, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randn(T, B, generator=g, dtype=dtype) * 3
    values = torch.randn(T + 1, B, generator=g, dtype=dtype)
    dones = (torch.rand(T, B, generator=g) < 0.2).to(dtype)
    log_rhos = torch.randn(T, B, generator=g, dtype=dtype) * 0.5
    return rewards, values, dones, log_rhos


@pytest.mark.parametrize(
    ("T", "B", "dtype"),
    [(32, 4, torch.float32), (32, 160, torch.float32), (1, 1, torch.float32), (17, 5, torch.float64)],
)
def test_estimators_are_bit_identical_to_the_torch_loops(T, B, dtype):
    for seed in range(3):
        rewards, values, dones, log_rhos = _batch(T, B, dtype, seed)
        for lam in (0.0, 0.95, 1.0):
            for new, old in zip(
                gae(rewards, values, dones, 0.99, lam),
                _old_gae(rewards, values, dones, 0.99, lam),
                strict=True,
            ):
                assert new.dtype == old.dtype and torch.equal(new, old)
        for rho, c in ((1.0, 1.0), (0.5, 2.0)):
            new_v = vtrace(rewards, values, dones, log_rhos, 0.97, rho, c)
            old_v = _old_vtrace(rewards, values, dones, log_rhos, 0.97, rho, c)
            for new, old in zip(new_v, old_v, strict=True):
                assert torch.equal(new, old)
        new_r = discounted_returns(rewards, dones, values[-1], 0.99)
        assert torch.equal(new_r, _old_discounted_returns(rewards, dones, values[-1], 0.99))


def test_non_contiguous_inputs_and_the_autograd_path():
    rewards, values, dones, _ = _batch(8, 6, torch.float32, 7)
    # a transposed view (the learners' batches are transposed slot-major buffers)
    x, coef = rewards.t().contiguous().t(), (0.9 * (1.0 - dones)).t().contiguous().t()
    assert not x.is_contiguous()
    init = torch.zeros(6)
    assert torch.equal(reverse_scan(x, coef, init), reverse_scan(x.contiguous(), coef.contiguous(), init))
    # with a gradient to track the torch loop runs, and the gradient reaches the inputs
    xg = rewards.clone().requires_grad_(True)
    y = reverse_scan(xg, coef, init)
    assert torch.equal(y.detach(), reverse_scan(rewards, coef, init))
    y.sum().backward()
    # d(sum y)/dx_t = 1 + coef_{t-1} (1 + coef_{t-2} (...)): the same recurrence run forwards
    expected = torch.empty_like(rewards)
    acc = torch.zeros(6)
    for t in range(8):
        acc = 1.0 + (coef[t - 1] * acc if t > 0 else 0.0)
        expected[t] = acc
    assert torch.allclose(xg.grad, expected, rtol=1e-5, atol=1e-6)
