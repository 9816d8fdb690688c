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
