"""The PPO loss against a per-sample reference: PPO's clipped surrogate (Schulman et al. 2017,
eq. 7, with Sample Factory's ratio clip [1/(1+ε), 1+ε]) and the clipped value loss."""

import gymnasium as gym
import pytest
import torch

from surge.algorithms.appo.ppo_loss import PPOLossConfig, ppo_loss
from surge.models.distributions import make_distribution

SPACE = gym.spaces.Discrete(3)
EPS, DELTA = 0.2, 0.5


def _inputs(seed=0, n=64):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, 3, generator=g).requires_grad_()
    actions = torch.randint(3, (n,), generator=g)
    # behaviour log-probs far from the current ones: ratios from ~0.1 to ~10
    behavior_log_probs = torch.log_softmax(torch.randn(n, 3, generator=g), -1)[torch.arange(n), actions]
    behavior_log_probs = behavior_log_probs + 1.5 * torch.randn(n, generator=g)
    advantages = torch.randn(n, generator=g)
    old_values = torch.randn(n, generator=g)
    values = (old_values + 2.0 * torch.randn(n, generator=g)).requires_grad_()  # moved by up to ±4 > δ
    targets = torch.randn(n, generator=g) * 2.0
    valids = (torch.rand(n, generator=g) > 0.1).float()
    return logits, actions, behavior_log_probs, advantages, values, old_values, targets, valids


def _loss(inputs, coeffs):
    logits, actions, blp, adv, values, old_values, targets, valids = inputs
    cfg = PPOLossConfig(EPS, DELTA, *coeffs)
    dist = make_distribution(SPACE, logits)
    return ppo_loss(dist, dist, actions, blp, adv, values, old_values, targets, valids, cfg)


def _reference_policy_loss(logits, actions, blp, adv, valids):
    terms = []
    for i in range(len(actions)):
        if not valids[i]:
            continue
        logp = torch.log_softmax(logits[i], -1)[actions[i]]
        r = (logp - blp[i]).exp()
        clipped = r.clamp(1.0 / (1.0 + EPS), 1.0 + EPS)
        terms.append(-torch.min(r * adv[i], clipped * adv[i]))
    return torch.stack(terms).mean()


def _reference_value_loss(values, old_values, targets, valids):
    terms = []
    for i in range(len(values)):
        if not valids[i]:
            continue
        v_clip = old_values[i] + (values[i] - old_values[i]).clamp(-DELTA, DELTA)
        terms.append(torch.max((values[i] - targets[i]) ** 2, (v_clip - targets[i]) ** 2))
    return torch.stack(terms).mean()


def test_policy_loss_and_its_gradient_clip_the_ratio():
    inputs = _inputs()
    logits, actions, blp, adv, _, _, _, valids = inputs
    ratio = (torch.log_softmax(logits, -1)[torch.arange(len(actions)), actions] - blp).exp()
    # clipping decides: the clipped term is the minimum for many samples
    assert (((ratio > 1 + EPS) & (adv > 0)) | ((ratio < 1 / (1 + EPS)) & (adv < 0))).sum() > 10
    loss, stats = _loss(inputs, (0.0, "entropy", 0.0, 0.0))  # policy term only
    ref = _reference_policy_loss(logits, actions, blp, adv, valids)
    torch.testing.assert_close(stats["policy_loss"], ref.detach())
    (grad,) = torch.autograd.grad(loss, logits)
    (ref_grad,) = torch.autograd.grad(ref, logits)
    torch.testing.assert_close(grad, ref_grad)


def test_value_loss_and_its_gradient_clip_the_value_change():
    inputs = _inputs(seed=1)
    _, _, _, _, values, old_values, targets, valids = inputs
    v_clip = old_values + (values - old_values).clamp(-DELTA, DELTA)
    assert ((v_clip - targets) ** 2 > (values - targets) ** 2).sum() > 10  # the clipped branch decides
    coeff = 0.7
    loss, stats = _loss(inputs, (coeff, "entropy", 0.0, 0.0))
    (grad,) = torch.autograd.grad(loss, values)
    ref = coeff * _reference_value_loss(values, old_values, targets, valids)
    torch.testing.assert_close(stats["value_loss"], ref.detach())
    (ref_grad,) = torch.autograd.grad(ref, values)
    torch.testing.assert_close(grad, ref_grad)


@pytest.mark.parametrize("seed", [2, 3])
def test_total_loss_is_policy_plus_value_minus_entropy_bonus(seed):
    inputs = _inputs(seed=seed)
    logits, actions, blp, adv, values, old_values, targets, valids = inputs
    loss, _ = _loss(inputs, (0.5, "entropy", 0.01, 0.0))
    entropy = torch.distributions.Categorical(logits=logits).entropy()
    ref = (
        _reference_policy_loss(logits, actions, blp, adv, valids)
        + 0.5 * _reference_value_loss(values, old_values, targets, valids)
        - 0.01 * (entropy * valids).sum() / valids.sum()
    )
    torch.testing.assert_close(loss, ref)


def test_symmetric_clip_is_rl_games_actor_loss():
    """`symmetric_clip` ([1-ε, 1+ε], PPO's eq. 7 as written) gives rl_games 1.6.5's actor loss
    (common_losses.actor_loss, which takes negative log-probs) on the same samples, and differs from
    Sample Factory's clip where a ratio lies in [1-ε, 1/(1+ε))."""
    common_losses = pytest.importorskip("rl_games.common.common_losses")
    logits, actions, blp, adv, values, old_values, targets, _ = _inputs(seed=3)
    valids = torch.ones_like(adv)
    dist = make_distribution(SPACE, logits)
    coeffs = (0.0, "entropy", 0.0, 0.0)
    sym = PPOLossConfig(EPS, DELTA, *coeffs, symmetric_clip=True)
    _, stats = ppo_loss(dist, dist, actions, blp, adv, values, old_values, targets, valids, sym)
    expected = common_losses.actor_loss(-blp, -dist.log_prob(actions), adv, True, EPS).mean()
    assert stats["policy_loss"].item() == pytest.approx(expected.item(), rel=1e-6)
    _, sf = ppo_loss(
        dist, dist, actions, blp, adv, values, old_values, targets, valids, PPOLossConfig(EPS, DELTA, *coeffs)
    )
    assert sf["policy_loss"].item() != pytest.approx(expected.item(), rel=1e-3)
