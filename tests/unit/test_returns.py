"""Return estimators against naive per-sample reference loops."""

import numpy as np
import pytest
import torch

from surge.learning.returns import bootstrap_truncated_rewards, discounted_returns, gae, vtrace


def _random_batch(T=17, B=5, seed=0, done_p=0.15):
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randn(T, B, generator=g)
    values = torch.randn(T + 1, B, generator=g)
    dones = (torch.rand(T, B, generator=g) < done_p).float()
    return rewards, values, dones


def naive_gae(rewards, values, dones, gamma, lam):
    T, B = rewards.shape
    adv = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total, coef = 0.0, 1.0
            for k in range(t, T):
                nd = 1.0 - dones[k, b]
                delta = rewards[k, b] + gamma * nd * values[k + 1, b] - values[k, b]
                total += coef * delta
                if nd == 0:
                    break
                coef *= gamma * lam
            adv[t, b] = total
    return adv


def naive_returns(rewards, dones, bootstrap, gamma):
    T, B = rewards.shape
    out = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            g, disc = 0.0, 1.0
            for k in range(t, T):
                g += disc * rewards[k, b]
                if dones[k, b]:
                    break
                disc *= gamma
            else:
                g += disc * bootstrap[b]
            out[t, b] = g
    return out


@pytest.mark.parametrize("lam", [0.0, 0.95, 1.0])
def test_gae_matches_naive_sum(lam):
    rewards, values, dones = _random_batch()
    adv, targets = gae(rewards, values, dones, 0.97, lam)
    ref = naive_gae(rewards.numpy(), values.numpy(), dones.numpy(), 0.97, lam)
    np.testing.assert_allclose(adv.numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(targets.numpy(), ref + values[:-1].numpy(), rtol=1e-5, atol=1e-5)


def test_discounted_returns_match_naive():
    rewards, values, dones = _random_batch(seed=3)
    out = discounted_returns(rewards, dones, values[-1], 0.9)
    ref = naive_returns(rewards.numpy(), dones.numpy(), values[-1].numpy(), 0.9)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_gae_lambda_one_equals_discounted_returns():
    rewards, values, dones = _random_batch(seed=4)
    _, targets = gae(rewards, values, dones, 0.99, 1.0)
    ref = discounted_returns(rewards, dones, values[-1], 0.99)
    torch.testing.assert_close(targets, ref, rtol=1e-5, atol=1e-5)


def test_vtrace_on_policy_equals_lambda_one_returns():
    rewards, values, dones = _random_batch(seed=5)
    vs, adv = vtrace(rewards, values, dones, torch.zeros_like(rewards), 0.99, rho_bar=1.0, c_bar=1.0)
    ref = discounted_returns(rewards, dones, values[-1], 0.99)
    torch.testing.assert_close(vs, ref, rtol=1e-5, atol=1e-5)
    # advantages: r_t + γ v_{t+1} - V_t with v_T = V_T
    vs_next = torch.cat([vs[1:], values[-1:]])
    torch.testing.assert_close(adv, rewards + 0.99 * (1 - dones) * vs_next - values[:-1])


def naive_vtrace(rewards, values, dones, log_rhos, gamma, rho_bar, c_bar):
    """Espeholt et al. 2018 eq. 1, the explicit sum."""
    T, B = rewards.shape
    rhos = np.exp(log_rhos)
    vs = np.zeros((T, B))
    for b in range(B):
        for s in range(T):
            total, disc, trace = values[s, b], 1.0, 1.0
            for t in range(s, T):
                g = gamma * (1 - dones[t, b])
                delta = min(rho_bar, rhos[t, b]) * (rewards[t, b] + g * values[t + 1, b] - values[t, b])
                total += disc * trace * delta
                if dones[t, b]:
                    break
                disc *= gamma
                trace *= min(c_bar, rhos[t, b])
            vs[s, b] = total
    return vs


@pytest.mark.parametrize("rho_bar,c_bar", [(1.0, 1.0), (0.5, 0.9), (2.0, 1.0)])
def test_vtrace_off_policy_matches_explicit_sum(rho_bar, c_bar):
    rewards, values, dones = _random_batch(seed=6)
    log_rhos = torch.randn_like(rewards, generator=None) * 0.5
    vs, _ = vtrace(rewards, values, dones, log_rhos, 0.95, rho_bar, c_bar)
    ref = naive_vtrace(rewards.numpy(), values.numpy(), dones.numpy(), log_rhos.numpy(), 0.95, rho_bar, c_bar)
    np.testing.assert_allclose(vs.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_truncation_bootstrap_adds_discounted_value_only_where_truncated():
    rewards = torch.ones(3, 2)
    values = torch.full((3, 2), 2.0)
    truncated = torch.tensor([[0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    out = bootstrap_truncated_rewards(rewards, values, truncated, 0.5)
    assert out.tolist() == [[1.0, 2.0], [1.0, 1.0], [2.0, 1.0]]
