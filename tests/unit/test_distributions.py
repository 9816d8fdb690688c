"""Action distributions: shapes, log-probs against torch references, entropy, KL, sampling."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.models.distributions import action_shape, make_distribution, num_action_logits


def test_discrete_log_prob_entropy_and_mode():
    space = gym.spaces.Discrete(4)
    logits = torch.randn(6, num_action_logits(space))
    d = make_distribution(space, logits)
    a = d.sample()
    assert a.shape == (6,) and a.dtype == torch.int64
    ref = torch.log_softmax(logits, -1).gather(1, a[:, None]).squeeze(1)
    torch.testing.assert_close(d.log_prob(a), ref)
    p = torch.softmax(logits, -1)
    torch.testing.assert_close(d.entropy(), -(p * p.log()).sum(-1))
    assert torch.equal(d.mode(), logits.argmax(-1))


@pytest.mark.parametrize(
    "space",
    [gym.spaces.MultiDiscrete([3, 5]), gym.spaces.Tuple([gym.spaces.Discrete(3), gym.spaces.Discrete(5)])],
)
def test_multi_head_log_prob_is_sum_of_heads(space):
    logits = torch.randn(4, 8)
    d = make_distribution(space, logits)
    a = d.sample()
    assert a.shape == (4, 2)
    assert action_shape(space) == ((2,), torch.int64)
    lp0 = torch.log_softmax(logits[:, :3], -1).gather(1, a[:, :1]).squeeze(1)
    lp1 = torch.log_softmax(logits[:, 3:], -1).gather(1, a[:, 1:]).squeeze(1)
    torch.testing.assert_close(d.log_prob(a), lp0 + lp1)


def test_gaussian_log_prob_and_kl():
    space = gym.spaces.Box(-1, 1, (3,), np.float32)
    assert num_action_logits(space) == 6
    mean, log_std = torch.randn(5, 3), torch.randn(5, 3) * 0.3
    d = make_distribution(space, torch.cat([mean, log_std], -1))
    a = d.sample()
    ref = torch.distributions.Normal(mean, log_std.exp()).log_prob(a).sum(-1)
    torch.testing.assert_close(d.log_prob(a), ref)
    torch.testing.assert_close(d.kl(d), torch.zeros(5), atol=1e-6, rtol=0)
    other = make_distribution(space, torch.cat([mean + 1.0, log_std], -1))
    # KL of equal-std Gaussians with unit mean shift: sum 1 / (2 σ²)
    torch.testing.assert_close(d.kl(other), (0.5 / (2 * log_std).exp()).sum(-1))


def test_symmetric_kl_with_uniform_is_zero_for_uniform_and_grows():
    space = gym.spaces.Discrete(5)
    uniform = make_distribution(space, torch.zeros(2, 5))
    torch.testing.assert_close(uniform.symmetric_kl_with_uniform(), torch.zeros(2), atol=1e-6, rtol=0)
    logits = torch.tensor([[10.0, 0, 0, 0, 0], [1.0, -2.0, 0.5, 0, 3.0]])
    p = torch.distributions.Categorical(logits=logits)
    u = torch.distributions.Categorical(logits=torch.zeros(2, 5))
    kl = torch.distributions.kl_divergence
    # Sample Factory's symmetric KL: the mean of the two directions
    expected = 0.5 * (kl(p, u) + kl(u, p))
    torch.testing.assert_close(make_distribution(space, logits).symmetric_kl_with_uniform(), expected)


def test_sampling_frequencies_follow_probabilities():
    torch.manual_seed(0)
    space = gym.spaces.Discrete(3)
    probs = torch.tensor([0.2, 0.3, 0.5])
    d = make_distribution(space, probs.log().expand(20000, 3))
    freq = torch.bincount(d.sample(), minlength=3).float() / 20000
    torch.testing.assert_close(freq, probs, atol=0.02, rtol=0)


def test_tuple_of_discrete_and_box_is_the_sum_of_its_heads():
    space = gym.spaces.Tuple(
        [gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (1,), np.float32), gym.spaces.Discrete(2)]
    )
    assert num_action_logits(space) == 3 + 2 + 2
    assert action_shape(space) == ((3,), torch.float32)
    logits = torch.randn(6, 7)
    d = make_distribution(space, logits)
    a = d.sample()
    assert a.shape == (6, 3) and a.dtype == torch.float32
    assert set(a[:, 0].tolist()) <= {0.0, 1.0, 2.0} and set(a[:, 2].tolist()) <= {0.0, 1.0}
    cat0 = torch.distributions.Categorical(logits=logits[:, :3])
    normal = torch.distributions.Normal(logits[:, 3:4], logits[:, 4:5].exp())
    cat2 = torch.distributions.Categorical(logits=logits[:, 5:])
    ref = cat0.log_prob(a[:, 0].long()) + normal.log_prob(a[:, 1:2]).sum(-1) + cat2.log_prob(a[:, 2].long())
    torch.testing.assert_close(d.log_prob(a), ref)
    torch.testing.assert_close(d.entropy(), cat0.entropy() + normal.entropy().sum(-1) + cat2.entropy())
    torch.testing.assert_close(d.kl(d), torch.zeros(6), atol=1e-6, rtol=0)
    mode = d.mode()
    assert torch.equal(mode[:, 0], logits[:, :3].argmax(-1).float()) and torch.equal(mode[:, 1], logits[:, 3])


def _chi_square_p_value(counts: torch.Tensor, probs: torch.Tensor) -> float:
    """Pearson's chi-square goodness-of-fit test: P(X >= statistic) for X ~ chi2(k - 1), i.e. the
    regularised upper incomplete gamma function Q((k - 1) / 2, statistic / 2)."""
    expected = probs.double() * float(counts.sum())
    stat = ((counts.double() - expected) ** 2 / expected).sum()
    df = torch.tensor((len(counts) - 1) / 2, dtype=torch.float64)
    return float(torch.special.gammaincc(df, stat / 2))


@pytest.mark.parametrize("n", [2, 6, 18])
def test_acting_draws_follow_torch_categorical_probabilities(n):
    """`sample_with_log_prob` (the inference path, the exponential race) against the probabilities
    of `torch.distributions.Categorical` on the same logits: a chi-square test per row, and the
    log-probs it returns equal `Categorical.log_prob` of the drawn actions."""
    torch.manual_seed(1)
    logits = torch.randn(3, n) * 2.0
    draws = 60_000
    d = make_distribution(gym.spaces.Discrete(n), logits.repeat_interleave(draws, 0))
    a, log_prob = d.sample_with_log_prob()
    assert a.dtype == torch.int64 and a.shape == (3 * draws,)
    ref = torch.distributions.Categorical(logits=logits.repeat_interleave(draws, 0))
    torch.testing.assert_close(log_prob, ref.log_prob(a))
    for row in range(3):
        counts = torch.bincount(a[row * draws : (row + 1) * draws], minlength=n)
        assert _chi_square_p_value(counts, torch.softmax(logits[row], -1)) > 1e-4


def test_acting_never_draws_a_zero_probability_action(monkeypatch):
    """Masked actions (first, middle and last) are never drawn, whatever the exponential clocks,
    also a clock of exactly 0 (0 / 0 would be NaN, which argmax takes as the largest); the legal
    ones keep their renormalised probabilities."""
    from surge.models.distributions import MASKED_LOGIT

    torch.manual_seed(2)
    logits = torch.tensor([[MASKED_LOGIT, 1.0, MASKED_LOGIT, 0.0, 2.0, MASKED_LOGIT]]).expand(100_000, 6)
    a, log_prob = make_distribution(gym.spaces.Discrete(6), logits).sample_with_log_prob()
    counts = torch.bincount(a, minlength=6)
    assert counts[[0, 2, 5]].tolist() == [0, 0, 0]
    legal = torch.softmax(torch.tensor([1.0, 0.0, 2.0]), -1)
    assert _chi_square_p_value(counts[[1, 3, 4]], legal) > 1e-4
    assert torch.isfinite(log_prob).all()
    # the edges of the clocks themselves: all 0, all huge, 0 for the masked actions only
    from surge.models import distributions as dist_mod

    log_p = torch.log_softmax(logits[:1], -1)
    masked_zero = torch.tensor([[0.0, 1.0, 0.0, 1.0, 1.0, 0.0]])
    for clocks in (torch.zeros(1, 6), torch.full((1, 6), 3e38), masked_zero):
        with monkeypatch.context() as m:
            m.setattr(torch.Tensor, "exponential_", _constant_clocks(clocks))
            assert int(dist_mod._exponential_race_sample(log_p)) in (1, 3, 4)


def _constant_clocks(values: torch.Tensor):
    """A stand-in for `Tensor.exponential_` that fills the tensor with `values`."""

    def exponential_(self: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        return self.copy_(values)

    return exponential_


def test_acting_draws_an_action_of_the_space_from_nan_logits():
    """NaN logits (which the learner never publishes) still give actions within the space, not an
    index one past its last action."""
    from surge.models import distributions as dist_mod

    log_p = torch.full((5, 4), float("nan"))
    a = dist_mod._exponential_race_sample(log_p).squeeze(-1)
    assert a.shape == (5,) and bool(((a >= 0) & (a < 4)).all())


def test_entropy_with_masked_actions_matches_torch_categorical():
    """Entropy over the legal actions (a masked one adds 0, not NaN) and its gradient, against
    `torch.distributions.Categorical` on the same logits."""
    from surge.models.distributions import MASKED_LOGIT, apply_action_mask

    space = gym.spaces.MultiDiscrete([4, 3])
    torch.manual_seed(5)
    raw = torch.randn(8, 7, requires_grad=True)
    mask = torch.ones(8, 7, dtype=torch.bool)
    mask[:, 1] = False
    mask[::2, 6] = False
    ours = make_distribution(space, raw, mask).entropy()
    masked = apply_action_mask(space, raw, mask)
    heads = torch.split(masked, [4, 3], dim=-1)
    ref = sum(torch.distributions.Categorical(logits=h).entropy() for h in heads)
    torch.testing.assert_close(ours, ref)
    assert bool(torch.isfinite(ours).all()) and MASKED_LOGIT < 0
    (g_ours,) = torch.autograd.grad(ours.sum(), raw)
    (g_ref,) = torch.autograd.grad(ref.sum(), raw)
    torch.testing.assert_close(g_ours, g_ref)
    # logits of -inf (a zero probability without the mask's finite stand-in)
    inf_logits = torch.tensor([[0.5, float("-inf"), 1.0], [float("-inf"), 0.0, 0.0]])
    ours = make_distribution(gym.spaces.Discrete(3), inf_logits).entropy()
    torch.testing.assert_close(ours, torch.distributions.Categorical(logits=inf_logits).entropy())


def test_acting_multi_head_log_prob_is_the_sum_of_its_heads():
    space = gym.spaces.MultiDiscrete([3, 5])
    torch.manual_seed(3)
    logits = torch.randn(4, 8)
    a, log_prob = make_distribution(space, logits).sample_with_log_prob()
    assert a.shape == (4, 2) and a.dtype == torch.int64
    c0 = torch.distributions.Categorical(logits=logits[:, :3])
    c1 = torch.distributions.Categorical(logits=logits[:, 3:])
    torch.testing.assert_close(log_prob, c0.log_prob(a[:, 0]) + c1.log_prob(a[:, 1]))


def test_acting_gaussian_log_prob_matches_normal_and_draws_its_moments():
    space = gym.spaces.Box(-1, 1, (2,), np.float32)
    mean, log_std = torch.tensor([[0.5, -1.0]]), torch.tensor([[-0.5, 0.3]])
    torch.manual_seed(4)
    d = make_distribution(space, torch.cat([mean, log_std], -1).expand(200_000, 4))
    a, log_prob = d.sample_with_log_prob()
    normal = torch.distributions.Normal(mean, log_std.exp())
    torch.testing.assert_close(log_prob, normal.log_prob(a).sum(-1), atol=1e-5, rtol=1e-5)
    # mean and std of the draws within 4 standard errors of the distribution's
    se_mean = log_std.exp()[0] / 200_000**0.5
    assert ((a.mean(0) - mean[0]).abs() < 4 * se_mean).all()
    assert ((a.std(0) / log_std.exp()[0] - 1).abs() < 0.01).all()
    # with autograd: actions carry no gradient, and the log-prob's is Normal.log_prob's
    logits = torch.cat([mean, log_std], -1).requires_grad_()
    a, log_prob = make_distribution(space, logits).sample_with_log_prob()
    assert not a.requires_grad and not make_distribution(space, logits).sample().requires_grad
    (grad,) = torch.autograd.grad(log_prob.sum(), logits)
    m, ls = logits.chunk(2, -1)
    (ref,) = torch.autograd.grad(torch.distributions.Normal(m, ls.exp()).log_prob(a).sum(), logits)
    torch.testing.assert_close(grad, ref)


def test_symmetric_kl_of_logits_known_unmasked_takes_sample_factorys_formula():
    # all_legal (a model without action masks) takes the plain formula; it must equal the masked
    # path's result on unmasked logits and the two KL directions of torch.distributions
    space = gym.spaces.MultiDiscrete([5, 3])
    logits = torch.tensor([[10.0, 0, 0, 0, 0, 1.0, -1.0, 0.0], [1.0, -2.0, 0.5, 0, 3.0, 0.0, 0.0, 0.0]])
    kl = torch.distributions.kl_divergence
    expected = torch.zeros(2)
    for part in torch.split(logits, [5, 3], dim=-1):
        p, u = (
            torch.distributions.Categorical(logits=part),
            torch.distributions.Categorical(logits=torch.zeros_like(part)),
        )
        expected = expected + 0.5 * (kl(p, u) + kl(u, p))
    fast = make_distribution(space, logits, all_legal=True)
    assert fast.all_legal
    torch.testing.assert_close(fast.symmetric_kl_with_uniform(), expected)
    torch.testing.assert_close(make_distribution(space, logits).symmetric_kl_with_uniform(), expected)
    # a mask always takes the legal-actions path, whatever the caller claimed
    assert not make_distribution(space, logits, torch.ones(2, 8, dtype=torch.bool), all_legal=True).all_legal
