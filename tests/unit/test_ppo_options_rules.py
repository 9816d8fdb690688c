"""rl_games' PPO options as pure rules, against rl_games 1.6.5's own code (imported where it can be)
and a naive re-implementation: the KL-adaptive learning rate, the bounds loss, the reward shaper,
the action rescaling, the KL direction; and the flags' refusals before a run starts."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from surge.algorithms.appo.bounds_loss import action_bounds_loss
from surge.algorithms.appo.config import APPOParams
from surge.app.resolve import parse_cfg
from surge.cfg.config import algo_params
from surge.errors import ConfigError
from surge.learning.kl_adaptive import KLAdaptiveLR, adaptive_lr_update
from surge.learning.reward_shaping import shaped_rewards
from surge.models.distributions import GaussianDistribution
from surge.sampling.env_actions import BoxActionMap

rl_games = pytest.importorskip("rl_games")


def _naive_rule(lr, kl, thr, lo, hi):
    """rl_games' README: lr / 1.5 (not below min) when kl > 2 thr, lr * 1.5 (not above max) when
    kl < thr / 2."""
    if kl > 2 * thr:
        return max(lr / 1.5, lo)
    if kl < 0.5 * thr:
        return min(lr * 1.5, hi)
    return lr


def test_kl_adaptive_rule_matches_rl_games_scheduler_over_a_sequence():
    from rl_games.common.schedulers import AdaptiveScheduler

    rng = np.random.default_rng(0)
    kls = np.concatenate([rng.uniform(0, 0.04, 300), np.zeros(40), np.full(40, 1.0)])  # hits both bounds
    ref = AdaptiveScheduler(kl_threshold=0.008)
    ours = KLAdaptiveLR(3e-4, 0.008, 1e-6, 1e-2, per_epoch=False)
    lr_ref = lr_naive = 3e-4
    for kl in kls:
        lr_ref, _ = ref.update(lr_ref, 0.0, 0, 0, float(kl))
        lr_naive = _naive_rule(lr_naive, float(kl), 0.008, 1e-6, 1e-2)
        assert ours.update(float(kl)) == lr_ref == lr_naive
    assert ours.updates == len(kls)
    # the bounds were reached: 40 zero KLs end at the max, 40 large ones at the min
    assert adaptive_lr_update(1e-2, 0.0, 0.008, 1e-6, 1e-2) == 1e-2
    assert lr_ref == 1e-6


def test_kl_adaptive_ignores_a_nonfinite_kl_and_round_trips_its_state():
    s = KLAdaptiveLR(1e-3, 0.01, 1e-6, 1e-2, per_epoch=True)
    assert s.update(float("nan")) == 1e-3 and s.updates == 0
    s.update(0.0)
    t = KLAdaptiveLR(5.0, 0.01, 1e-6, 1e-2, per_epoch=True)
    t.load_state_dict(s.state_dict())
    assert t.lr == pytest.approx(1.5e-3) and t.updates == 1


@pytest.mark.slow  # importing rl_games' a2c_continuous takes ~4 s
def test_bounds_loss_matches_rl_games_bound_and_reg_loss():
    from rl_games.algos_torch.a2c_continuous import A2CAgent

    mu = torch.tensor([[0.0, 1.1, 1.5, -2.0], [-1.1, -1.2, 0.5, 3.0], [0.3, -0.3, 1.0, -1.0]])
    agent = SimpleNamespace(bounds_loss_coef=1.0)
    torch.testing.assert_close(action_bounds_loss(mu, "bound"), A2CAgent.bound_loss(agent, mu))
    torch.testing.assert_close(action_bounds_loss(mu, "regularisation"), A2CAgent.reg_loss(agent, mu))
    # by hand: row 0 has (1.5 - 1.1)^2 + (-2 + 1.1)^2
    assert float(action_bounds_loss(mu, "bound")[0]) == pytest.approx(0.4**2 + 0.9**2)
    with pytest.raises(ValueError):
        action_bounds_loss(mu, "both")


def test_reward_shift_scale_clip_match_rl_games_rewards_shaper():
    from rl_games.common.tr_helpers import DefaultRewardsShaper

    r = torch.tensor([-30.0, -1.0, 0.0, 0.5, 2.0, 100.0])
    ref = DefaultRewardsShaper(scale_value=0.1, shift_value=-1.0, min_val=-5.0, max_val=5.0)
    torch.testing.assert_close(shaped_rewards(r, -1.0, 0.1, 5.0), ref(r))
    torch.testing.assert_close(shaped_rewards(r, 0.0, 1.0, 10.0), r.clamp(-10, 10))


def test_rescaled_actions_match_rl_games_preprocess_actions():
    from rl_games.common.a2c_common import rescale_actions

    low, high = np.array([-2.0, 0.0, -1.0], np.float32), np.array([2.0, 10.0, 3.0], np.float32)
    a = np.array([[-1.5, 0.0, 0.2], [0.3, 1.7, -1.0], [1.0, -0.5, 0.99]], np.float32)
    ref = rescale_actions(
        torch.from_numpy(low), torch.from_numpy(high), torch.clamp(torch.from_numpy(a), -1, 1)
    )
    np.testing.assert_allclose(BoxActionMap(low, high, clip=True, rescale=True)(a), ref.numpy(), rtol=1e-6)
    # rl_games' clip_actions: False passes the actions unchanged; surge's default clips to the bounds
    np.testing.assert_array_equal(BoxActionMap(low, high, clip=False, rescale=False)(a), a)
    np.testing.assert_array_equal(BoxActionMap(low, high, clip=True, rescale=False)(a), np.clip(a, low, high))
    assert BoxActionMap(low, high, clip=True, rescale=False)(a).dtype == np.float32


def test_kl_direction_is_rl_games_policy_kl():
    from rl_games.algos_torch.torch_ext import policy_kl

    g = torch.Generator().manual_seed(0)
    mu, old_mu = torch.randn(64, 3, generator=g), torch.randn(64, 3, generator=g)
    log_std, old_log_std = torch.randn(64, 3, generator=g) * 0.3, torch.randn(64, 3, generator=g) * 0.3
    cur = GaussianDistribution(torch.cat([mu, log_std], -1))
    old = GaussianDistribution(torch.cat([old_mu, old_log_std], -1))
    ref = policy_kl(mu, log_std.exp(), old_mu, old_log_std.exp(), reduce=False)  # + 1e-5 terms inside
    torch.testing.assert_close(cur.kl(old), ref, rtol=1e-3, atol=1e-3)


def _cfg(*flags):
    return parse_cfg(["--env=cartpole", "--experiment=x", "--train_dir=/tmp/unused_ppo_opts", *flags])


@pytest.mark.parametrize(
    "flags,field",
    [
        (["--algo=A2C", "--lr_schedule=kl_adaptive_epoch"], "lr_schedule"),
        (["--algo=DQN", "--lr_schedule=kl_adaptive_minibatch"], "lr_schedule"),
        (["--lr_schedule=kl_adaptive_epoch", "--lr_schedule_kl_threshold=0"], "lr_schedule_kl_threshold"),
        (["--lr_adaptive_min=1e-2", "--lr_adaptive_max=1e-3"], "lr_adaptive_min"),
        (["--bounds_loss_coef=-1"], "bounds_loss_coef"),
        (["--reward_shift=nan"], "reward_shift"),
        (["--score_to_win=inf"], "score_to_win"),
        (["--algo=DQN", "--rescale_actions=True"], "rescale_actions"),
        (["--algo=DQN", "--use_rnn=True", "--zero_rnn_on_done=False"], "zero_rnn_on_done"),
    ],
)
def test_bad_ppo_options_are_refused_naming_the_flag(flags, field):
    with pytest.raises(ConfigError, match=f"--{field}"):
        _cfg(*flags)


def test_defaults_are_todays_behaviour():
    cfg = _cfg()
    assert cfg.lr_schedule == "constant" and cfg.value_bootstrap and cfg.zero_rnn_on_done
    assert cfg.clip_actions and not cfg.rescale_actions and cfg.reward_shift == 0.0
    assert algo_params(cfg, APPOParams).bounds_loss_coef == 0.0 and cfg.score_to_win is None


def test_options_without_effect_are_reported():
    from surge.app.notes import config_notes

    notes = " ".join(
        config_notes(
            _cfg(
                "--lr_schedule_kl_threshold=0.02",
                "--use_rnn=False",
                "--zero_rnn_on_done=False",
                "--bound_loss_type=regularisation",
            )
        )
    )
    assert "--lr_schedule_kl_threshold has no effect without --lr_schedule=kl_adaptive" in notes
    assert "--zero_rnn_on_done=False has no effect with --use_rnn=False" in notes
    assert "--bound_loss_type has no effect with --bounds_loss_coef=0" in notes
    # an APPO flag with A2C: refused naming its owner (it was a core flag reported as unused
    # before APPO's section held it)
    with pytest.raises(ConfigError) as e:
        _cfg("--algo=A2C", "--bounds_loss_coef=0.1")
    assert e.value.field == "bounds_loss_coef" and "--algo=APPO" in str(e.value)


def test_central_value_takes_no_step_on_invalid_samples():
    """A batch with no valid sample (another policy's steps, stale ones) leaves the central value's
    weights as they were (a zero-loss Adam step would still move them through its momentum), and
    with some valid samples only those drive the update: the result equals training on them alone."""
    import gymnasium as gym

    from surge.cfg.config import Config
    from surge.learning.central_value import CentralValue, CentralValueTrainer

    cfg = Config(env="cartpole", central_value=True, central_value_mini_epochs=2, batch_size=4)
    space = gym.spaces.Box(-1, 1, (3,), np.float32)

    def trainer():
        torch.manual_seed(0)
        module = CentralValue(cfg, space)
        t = CentralValueTrainer(cfg, module, torch.device("cpu"), (0.9, 0.999))
        t.optimizer.zero_grad(set_to_none=True)
        return module, t

    g = torch.Generator().manual_seed(1)
    states, old, targets = (
        torch.randn(4, 2, 3, generator=g),
        torch.randn(4, 2, generator=g),
        torch.randn(4, 2, generator=g),
    )
    module, t = trainer()
    t.train(states, old, targets, torch.ones(4, 2), 1e-2)  # Adam has momentum from here on
    before = [p.detach().clone() for p in module.parameters()]
    t.train(states, old, targets, torch.zeros(4, 2), 1e-2)
    assert all(torch.equal(a, p) for a, p in zip(before, module.parameters(), strict=True))
    valids = torch.zeros(4, 2)
    valids[:, 0] = 1.0
    module, t = trainer()
    torch.manual_seed(5)
    t.train(states, old, targets, valids, 1e-2)
    module_ref, t_ref = trainer()
    torch.manual_seed(5)
    t_ref.train(states[:, :1], old[:, :1], targets[:, :1], valids[:, :1], 1e-2)
    for a, b in zip(module.parameters(), module_ref.parameters(), strict=True):
        torch.testing.assert_close(a, b)
