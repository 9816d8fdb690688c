"""The estimators with `terminated` and `truncated` apart (surge.learning.returns): a terminated
step bootstraps 0, a truncated one its `truncation_values`, and neither lets the recursion cross
it; against naive per-sample loops that read the two flags themselves."""

import numpy as np
import pytest
import torch

from surge.learning.returns import bootstrap_truncated_rewards, discounted_returns, gae, vtrace

GAMMA, LAM = 0.9, 0.8


def _episodes(T=19, B=6, seed=3):
    """Random rewards, values `[T+1, B]`, and terminated / truncated 0/1 flags, some steps both."""
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randn(T, B, generator=g)
    values = torch.randn(T + 1, B, generator=g)
    terminated = (torch.rand(T, B, generator=g) < 0.12).float()
    truncated = (torch.rand(T, B, generator=g) < 0.12).float()
    truncated[3, 0] = terminated[3, 0] = 1.0  # both: counts as terminated
    boot = torch.randn(T, B, generator=g)  # the truncated steps' bootstrap values
    return rewards, values, terminated, truncated, boot


def _next_value(values, terminated, truncated, boot, k, b):
    """What follows step k in column b: 0 after a termination, the truncation's bootstrap value
    after a time limit, the next step's value otherwise."""
    if terminated[k, b]:
        return 0.0
    if truncated[k, b]:
        return boot[k, b]
    return values[k + 1, b]


def naive_gae(rewards, values, terminated, truncated, boot, gamma, lam):
    """Schulman et al. 2016 eq. 16, `A_t = Σ_l (γλ)^l δ_{t+l}` summed up to the episode's end."""
    T, B = rewards.shape
    adv = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            total, coef = 0.0, 1.0
            for k in range(t, T):
                nxt = _next_value(values, terminated, truncated, boot, k, b)
                total += coef * (rewards[k, b] + gamma * nxt - values[k, b])
                if terminated[k, b] or truncated[k, b]:
                    break
                coef *= gamma * lam
            adv[t, b] = total
    return adv


def naive_returns(rewards, terminated, truncated, boot, bootstrap, gamma):
    T, B = rewards.shape
    out = np.zeros((T, B))
    for b in range(B):
        for t in range(T):
            g, disc = 0.0, 1.0
            for k in range(t, T):
                g += disc * rewards[k, b]
                if terminated[k, b] or truncated[k, b]:
                    g += disc * gamma * _next_value(None, terminated, truncated, boot, k, b)
                    break
                disc *= gamma
            else:
                g += disc * bootstrap[b]
            out[t, b] = g
    return out


def naive_vtrace(rewards, values, terminated, truncated, boot, log_rhos, gamma, rho_bar, c_bar):
    """Espeholt et al. 2018 eq. 1, the explicit sum, stopped at the episode's end."""
    T, B = rewards.shape
    rhos = np.exp(log_rhos)
    vs = np.zeros((T, B))
    for b in range(B):
        for s in range(T):
            total, disc, trace = values[s, b], 1.0, 1.0
            for t in range(s, T):
                nxt = _next_value(values, terminated, truncated, boot, t, b)
                total += (
                    disc * trace * min(rho_bar, rhos[t, b]) * (rewards[t, b] + gamma * nxt - values[t, b])
                )
                if terminated[t, b] or truncated[t, b]:
                    break
                disc *= gamma
                trace *= min(c_bar, rhos[t, b])
            vs[s, b] = total
    return vs


def test_a_truncated_step_and_a_terminated_step_give_different_advantages():
    # one column, one step each: the same reward and values, only the kind of end differs
    rewards = torch.tensor([[1.0, 1.0]])
    values = torch.tensor([[2.0, 2.0], [5.0, 5.0]])  # values[1]: the next episode's first value
    terminated = torch.tensor([[1.0, 0.0]])
    truncated = torch.tensor([[0.0, 1.0]])
    boot = torch.tensor([[3.0, 3.0]])
    adv, _ = gae(rewards, values, terminated, GAMMA, LAM, truncated=truncated, truncation_values=boot)
    ref = naive_gae(*(x.numpy() for x in (rewards, values, terminated, truncated, boot)), GAMMA, LAM)
    np.testing.assert_allclose(adv.numpy(), ref, rtol=1e-6)
    # terminated: 1 - 2 = -1; truncated: 1 + 0.9 * 3 - 2 = 1.7 (never the next episode's 5)
    np.testing.assert_allclose(adv.numpy(), [[-1.0, 1.7]], rtol=1e-6)


def test_gae_keeps_terminated_and_truncated_apart_as_the_naive_sum_does():
    rewards, values, terminated, truncated, boot = _episodes()
    adv, targets = gae(rewards, values, terminated, GAMMA, LAM, truncated=truncated, truncation_values=boot)
    ref = naive_gae(*(x.numpy() for x in (rewards, values, terminated, truncated, boot)), GAMMA, LAM)
    np.testing.assert_allclose(adv.numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(targets.numpy(), ref + values[:-1].numpy(), rtol=1e-5, atol=1e-5)


def test_without_truncation_values_a_truncation_bootstraps_zero_like_a_termination():
    rewards, values, terminated, truncated, _ = _episodes(seed=4)
    adv, _ = gae(rewards, values, terminated, GAMMA, LAM, truncated=truncated)
    merged, _ = gae(rewards, values, torch.maximum(terminated, truncated), GAMMA, LAM)
    assert torch.equal(adv, merged)


def test_discounted_returns_keep_the_two_ends_apart():
    rewards, _, terminated, truncated, boot = _episodes(seed=5)
    bootstrap = torch.randn(rewards.shape[1])
    out = discounted_returns(
        rewards, terminated, bootstrap, GAMMA, truncated=truncated, truncation_values=boot
    )
    ref = naive_returns(*(x.numpy() for x in (rewards, terminated, truncated, boot, bootstrap)), GAMMA)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rho_bar,c_bar", [(1.0, 1.0), (0.5, 0.9)])
def test_vtrace_keeps_the_two_ends_apart(rho_bar, c_bar):
    rewards, values, terminated, truncated, boot = _episodes(seed=6)
    log_rhos = torch.randn(rewards.shape, generator=torch.Generator().manual_seed(7)) * 0.5
    vs, _ = vtrace(
        rewards,
        values,
        terminated,
        log_rhos,
        GAMMA,
        rho_bar,
        c_bar,
        truncated=truncated,
        truncation_values=boot,
    )
    arrays = (x.numpy() for x in (rewards, values, terminated, truncated, boot, log_rhos))
    ref = naive_vtrace(*arrays, GAMMA, rho_bar, c_bar)
    np.testing.assert_allclose(vs.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_the_split_flags_are_bit_identical_to_folding_the_bootstrap_into_the_rewards():
    # the spelling before the split: rewards bootstrapped where truncated and not terminated, one
    # `dones` = terminated or truncated; the same float operations in the same order
    rewards, values, terminated, truncated, boot = _episodes(seed=8)
    only_trunc = truncated * (1.0 - terminated)
    folded = bootstrap_truncated_rewards(rewards, boot, only_trunc, GAMMA)
    dones = torch.maximum(terminated, truncated)
    split = gae(rewards, values, terminated, GAMMA, LAM, truncated=truncated, truncation_values=boot)
    assert all(torch.equal(a, b) for a, b in zip(split, gae(folded, values, dones, GAMMA, LAM), strict=True))
    log_rhos = torch.zeros_like(rewards)
    split = vtrace(rewards, values, terminated, log_rhos, GAMMA, truncated=truncated, truncation_values=boot)
    assert all(
        torch.equal(a, b) for a, b in zip(split, vtrace(folded, values, dones, log_rhos, GAMMA), strict=True)
    )
