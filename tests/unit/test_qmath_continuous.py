"""Target-network updates, DDPG/TD3 targets and SAC's squashed Gaussian, losses and temperature,
against Stable-Baselines3 (where installed), hand computations and float64 formulas."""

import math

import pytest
import torch
from torch import nn

from surge.algorithms.ddpg_td3.losses import (
    clipped_double_q_target,
    critic_loss,
    ddpg_critic_target,
    deterministic_actor_loss,
    td3_smoothed_actions,
)
from surge.algorithms.sac.losses import (
    default_target_entropy,
    sac_actor_loss,
    sac_soft_target,
    sac_temperature_loss,
)
from surge.learning.target_networks import hard_update, polyak_update
from surge.models.squashed_gaussian import squashed_gaussian_log_prob, squashed_gaussian_sample


def _nets(seed):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Linear(5, 2))
    net[1].running_mean.normal_()
    return net


def test_polyak_update_matches_the_formula_and_copies_buffers():
    source, target = _nets(0), _nets(1)
    before = [p.detach().clone() for p in target.parameters()]
    polyak_update(target, source, 0.005)
    for t, b, s in zip(target.parameters(), before, source.parameters(), strict=True):
        torch.testing.assert_close(t, 0.995 * b + 0.005 * s)
    torch.testing.assert_close(target[1].running_mean, source[1].running_mean)
    assert all(not p.grad_fn for p in target.parameters())
    with pytest.raises(ValueError, match="tau"):
        polyak_update(target, source, 1.5)
    with pytest.raises(ValueError, match="same parameters"):
        polyak_update(target, nn.Linear(3, 5), 0.1)


def test_polyak_update_matches_stable_baselines3():
    sb3_utils = pytest.importorskip("stable_baselines3.common.utils")
    source, ours, theirs = _nets(0), _nets(1), _nets(1)
    for _ in range(3):
        polyak_update(ours, source, 0.2)
        sb3_utils.polyak_update(source.parameters(), theirs.parameters(), 0.2)  # (params, target_params)
        with torch.no_grad():
            for p in source.parameters():
                p.add_(0.1)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_hard_update_copies_everything_and_tau_one_equals_it():
    source, a, b = _nets(0), _nets(1), _nets(2)
    hard_update(a, source)
    polyak_update(b, source, 1.0)
    for x, y, s in zip(
        a.state_dict().values(), b.state_dict().values(), source.state_dict().values(), strict=True
    ):
        assert torch.equal(x, s)
        torch.testing.assert_close(y, s)


def test_td3_target_matches_a_hand_computation_with_fixed_noise():
    # Fujimoto et al. 2018, eqs. 14-15: ã = clip(μ'(s') + clip(σξ, -c, c), -1, 1), y = r + γ min Q'
    next_actions = torch.tensor([[0.9, -0.2], [0.0, 0.5]])
    xi = torch.tensor([[1.0, -3.0], [0.5, 4.0]])  # σξ = [0.2, -0.6 -> -0.5], [0.1, 0.8 -> 0.5]
    a = td3_smoothed_actions(next_actions, noise_std=0.2, noise_clip=0.5, noise=xi)
    assert a.flatten().tolist() == pytest.approx([1.0, -0.7, 0.1, 1.0])  # 1.1 and 1.0 clipped to 1
    q1, q2 = torch.tensor([3.0, -1.0]), torch.tensor([2.5, 4.0])
    y = clipped_double_q_target(torch.tensor([1.0, 0.5]), torch.tensor([0.99, 0.0]), q1, q2)
    assert y.tolist() == pytest.approx([1.0 + 0.99 * 2.5, 0.5])
    assert ddpg_critic_target(
        torch.tensor([1.0]), torch.tensor([0.9]), torch.tensor([2.0])
    ).item() == pytest.approx(2.8)
    with pytest.raises(ValueError, match="noise"):
        td3_smoothed_actions(next_actions, -0.1, 0.5)


def test_td3_noise_is_clipped_and_centred():
    g = torch.Generator().manual_seed(0)
    a = td3_smoothed_actions(torch.zeros(20000, 1), 0.2, 0.5, generator=g, low=-10.0, high=10.0)
    assert a.abs().max().item() <= 0.5
    assert a.mean().item() == pytest.approx(0.0, abs=0.01)
    assert a.std().item() == pytest.approx(0.2, abs=0.01)


def test_critic_and_actor_losses():
    q1 = torch.tensor([1.0, 2.0], requires_grad=True)
    q2 = torch.tensor([0.0, 4.0], requires_grad=True)
    y = torch.tensor([1.5, 3.0])
    loss = critic_loss([q1, q2], y, torch.tensor([1.0, 2.0]))
    assert loss.item() == pytest.approx((0.25 + 2 * 1.0) / 2 + (2.25 + 2 * 1.0) / 2)
    assert deterministic_actor_loss(torch.tensor([1.0, 3.0])).item() == -2.0


def _float64_log_prob(u, mean, log_std):
    """log N(u; μ, σ) − log(1 − tanh²u), summed over dims, computed directly in float64."""
    u, mean, log_std = u.double(), mean.double(), log_std.double()
    std = log_std.exp()
    normal = -0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)
    return (normal - torch.log(1 - torch.tanh(u) ** 2)).sum(-1)


def test_squashed_gaussian_log_prob_matches_the_change_of_variables_in_float64():
    g = torch.Generator().manual_seed(0)
    mean, log_std = torch.randn(64, 3, generator=g), torch.randn(64, 3, generator=g) * 0.5
    s = squashed_gaussian_sample(mean, log_std, generator=g)
    torch.testing.assert_close(s.actions, torch.tanh(s.pre_tanh))
    torch.testing.assert_close(
        s.log_probs.double(), _float64_log_prob(s.pre_tanh, mean, log_std), rtol=1e-5, atol=1e-4
    )
    # far in the tail (u = ±12) the stable form stays finite where 1 − tanh² underflows in float32
    u = torch.tensor([[12.0, -12.0]])
    lp = squashed_gaussian_log_prob(u, torch.zeros(1, 2), torch.zeros(1, 2))
    assert torch.isfinite(lp).all()
    assert lp.item() == pytest.approx(
        _float64_log_prob(u, torch.zeros(1, 2), torch.zeros(1, 2)).item(), rel=1e-5
    )


def test_squashed_gaussian_log_prob_matches_stable_baselines3():
    dists = pytest.importorskip("stable_baselines3.common.distributions")
    g = torch.Generator().manual_seed(1)
    mean, log_std = torch.randn(128, 4, generator=g), torch.randn(128, 4, generator=g) * 0.3 - 0.5
    ours = squashed_gaussian_sample(mean, log_std, generator=g)
    theirs = dists.SquashedDiagGaussianDistribution(4).proba_distribution(mean, log_std)
    ref = theirs.log_prob(ours.actions, ours.pre_tanh)
    # SB3 adds ε = 1e-6 inside log(1 − a² + ε): equal up to that, on actions away from ±1
    keep = ours.actions.abs().max(dim=1).values < 0.99
    assert keep.sum() > 64
    torch.testing.assert_close(ours.log_probs[keep], ref[keep], rtol=1e-4, atol=1e-3)


def test_deterministic_sample_is_tanh_of_the_mean_and_gradients_reach_the_parameters():
    mean = torch.randn(4, 2, requires_grad=True)
    log_std = torch.zeros(4, 2, requires_grad=True)
    det = squashed_gaussian_sample(mean, log_std, deterministic=True)
    torch.testing.assert_close(det.actions, torch.tanh(mean))
    s = squashed_gaussian_sample(mean, log_std)
    (s.actions.sum() + s.log_probs.sum()).backward()
    assert mean.grad.abs().sum() > 0 and log_std.grad.abs().sum() > 0


def test_sac_soft_target_and_actor_loss_match_hand_computations():
    y = sac_soft_target(
        torch.tensor([1.0, 0.0]),
        torch.tensor([0.9, 0.0]),
        torch.tensor([2.0, 5.0]),
        torch.tensor([3.0, 1.0]),
        torch.tensor([-1.0, 7.0]),
        alpha=0.2,
    )
    assert y.tolist() == pytest.approx([1.0 + 0.9 * (2.0 + 0.2), 0.0])
    loss = sac_actor_loss(torch.tensor([-1.0, 0.5]), torch.tensor([1.0, 2.0]), torch.tensor([0.0, 3.0]), 0.1)
    assert loss.item() == pytest.approx(((-0.1 - 0.0) + (0.05 - 2.0)) / 2)
    assert default_target_entropy(6) == -6.0


@pytest.mark.parametrize("entropy,grows", [(-5.0, True), (1.0, False)])
def test_temperature_rises_when_entropy_is_below_target_and_falls_above(entropy, grows):
    target = default_target_entropy(2)  # -2
    log_alpha = torch.zeros((), requires_grad=True)
    log_probs = torch.full((32,), -entropy)  # entropy estimate −mean log π
    sac_temperature_loss(log_alpha, log_probs, target).backward()
    assert log_alpha.grad.item() == pytest.approx(entropy - target)  # dJ/dlogα = H − H̄
    opt = torch.optim.SGD([log_alpha], lr=0.1)
    opt.step()
    assert (log_alpha.item() > 0) == grows
