"""Action masks (issue 19, item 7): masked actions get zero probability and zero gradient, entropy
and KL are those of the distribution renormalised over the legal actions (references computed with
torch.distributions on the legal subset, or by hand), and no NaN appears with all but one action
masked."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import Categorical, kl_divergence

from surge.cfg.config import Config
from surge.envs.action_masks import (
    InfoActionMask,
    is_legal,
    model_obs_space,
    sample_legal,
    split_obs,
)
from surge.envs.multi_agent import SingleAgentAsMultiAgent
from surge.models.actor_critic import ActorCritic
from surge.models.distributions import make_distribution, random_actions

D7 = gym.spaces.Discrete(7)


def _logits_and_mask(seed=0, b=5, n=7):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, n, generator=g) * 2
    mask = torch.rand(b, n, generator=g) > 0.4
    mask[:, 0] = True  # at least one legal action per row
    return logits, mask


def test_masked_actions_get_zero_probability_and_zero_gradient():
    logits, mask = _logits_and_mask()
    logits.requires_grad_(True)
    dist = make_distribution(D7, logits, mask)
    actions = torch.tensor([0, 0, 0, 0, 0])
    probs = dist.heads[0].probs
    assert torch.all(probs[~mask] == 0)
    loss = -(dist.log_prob(actions).sum() + 0.3 * dist.entropy().sum())
    loss.backward()
    assert torch.all(logits.grad[~mask] == 0)
    assert torch.all(logits.grad[mask] != 0) or logits.grad[mask].abs().sum() > 0

    # reference: a Categorical over each row's legal logits alone, same loss
    for row in range(logits.shape[0]):
        legal = logits.detach()[row][mask[row]].clone().requires_grad_(True)
        ref = Categorical(logits=legal)
        assert torch.allclose(probs[row][mask[row]], ref.probs, atol=1e-6)
        idx = int(mask[row][: int(actions[row])].sum())  # the action's index among the legal ones
        ref_loss = -(ref.log_prob(torch.tensor(idx)) + 0.3 * ref.entropy())
        ref_loss.backward()
        assert torch.allclose(logits.grad[row][mask[row]], legal.grad, atol=1e-6)


def test_entropy_is_that_of_the_renormalised_legal_distribution():
    logits, mask = _logits_and_mask(1)
    ent = make_distribution(D7, logits, mask).entropy()
    for row in range(len(logits)):
        p = torch.softmax(logits[row][mask[row]].double(), -1)
        assert float(ent[row]) == pytest.approx(float(-(p * p.log()).sum()), abs=1e-5)


def test_kl_between_masked_distributions_is_over_legal_actions():
    logits, mask = _logits_and_mask(2)
    other = torch.randn_like(logits)
    kl = make_distribution(D7, logits, mask).kl(make_distribution(D7, other, mask))
    for row in range(len(logits)):
        ref = kl_divergence(
            Categorical(logits=logits[row][mask[row]]), Categorical(logits=other[row][mask[row]])
        )
        assert float(kl[row]) == pytest.approx(float(ref), abs=1e-5)


def test_symmetric_kl_with_uniform_is_against_uniform_over_legal_actions():
    logits, mask = _logits_and_mask(3)
    got = make_distribution(D7, logits, mask).symmetric_kl_with_uniform()
    for row in range(len(logits)):
        p = torch.softmax(logits[row][mask[row]].double(), -1)
        u = torch.full_like(p, 1.0 / len(p))
        ref = 0.5 * ((p * (p / u).log()).sum() + (u * (u / p).log()).sum())
        assert float(got[row]) == pytest.approx(float(ref), abs=1e-4)
    # without a mask the formula is the plain one (uniform over all 7)
    p = torch.softmax(logits.double(), -1)
    ref = 0.5 * ((p * (p * 7).log()).sum(-1) + ((1 / 7) * (1 / (7 * p)).log()).sum(-1))
    assert torch.allclose(make_distribution(D7, logits).symmetric_kl_with_uniform().double(), ref, atol=1e-4)


def test_all_but_one_masked_has_no_nan_anywhere():
    logits = torch.randn(4, 7, requires_grad=True)
    mask = torch.zeros(4, 7, dtype=torch.bool)
    mask[torch.arange(4), torch.tensor([3, 0, 6, 2])] = True
    dist = make_distribution(D7, logits, mask)
    other = make_distribution(D7, torch.randn(4, 7), mask)
    assert torch.equal(dist.sample(), torch.tensor([3, 0, 6, 2]))
    assert torch.equal(dist.mode(), torch.tensor([3, 0, 6, 2]))
    lp = dist.log_prob(torch.tensor([3, 0, 6, 2]))
    terms = [lp, dist.entropy(), dist.kl(other), dist.symmetric_kl_with_uniform()]
    for t in terms:
        assert torch.isfinite(t).all()
    assert torch.allclose(lp, torch.zeros(4), atol=1e-6) and torch.allclose(
        dist.entropy(), torch.zeros(4), atol=1e-6
    )
    sum(t.sum() for t in terms).backward()
    assert torch.isfinite(logits.grad).all() and torch.all(logits.grad[~mask] == 0)


def test_a_row_without_legal_action_is_left_unmasked():
    logits = torch.randn(2, 7)
    mask = torch.zeros(2, 7, dtype=torch.bool)
    mask[1, 2] = True
    dist = make_distribution(D7, logits, mask)
    assert torch.allclose(dist.heads[0].probs[0], torch.softmax(logits[0], -1))
    assert float(dist.heads[0].probs[1, 2]) == 1.0


def test_multidiscrete_masks_each_head():
    space = gym.spaces.MultiDiscrete([3, 4])
    logits = torch.randn(64, 7, requires_grad=True)
    mask = torch.tensor([[1, 0, 1, 0, 0, 1, 1]] * 64, dtype=torch.bool)
    dist = make_distribution(space, logits, mask)
    a = dist.sample()
    assert set(a[:, 0].tolist()) <= {0, 2} and set(a[:, 1].tolist()) <= {2, 3}
    dist.entropy().sum().backward()
    assert torch.all(logits.grad[:, ~mask[0]] == 0)
    ref = Categorical(logits=logits[0, [0, 2]]).entropy() + Categorical(logits=logits[0, [5, 6]]).entropy()
    assert float(dist.entropy()[0].detach()) == pytest.approx(float(ref.detach()), abs=1e-5)
    # the same with a 0/1 int mask, and the random-action sampler of the dummy sampler
    assert torch.equal(
        make_distribution(space, logits, mask.to(torch.int8)).heads[0].probs, dist.heads[0].probs
    )
    r = random_actions(space, 64, mask)
    assert set(r[:, 0].tolist()) <= {0, 2} and set(r[:, 1].tolist()) <= {2, 3}


def _masked_model():
    space = gym.spaces.Dict(
        {
            "observation": gym.spaces.Box(0, 1, (6, 7, 2), np.int8),
            "action_mask": gym.spaces.Box(0, 1, (7,), np.int8),
        }
    )
    cfg = Config(
        encoder_type="mlp",
        encoder_subtype="mlp",
        encoder_mlp_layers=[16],
        use_rnn=False,
        normalize_input=True,
    )
    return ActorCritic(cfg, space, D7), space


def test_actor_critic_masks_act_and_evaluate_and_does_not_encode_the_mask():
    model, space = _masked_model()
    first = next(m for m in model.encoder.modules() if isinstance(m, torch.nn.Linear))
    assert first.in_features == 6 * 7 * 2  # the mask is no input feature
    assert model_obs_space(space) == space.spaces["observation"]
    b = 256
    mask = torch.zeros(b, 7, dtype=torch.bool)
    mask[:, [1, 4]] = True
    obs = {"observation": torch.randint(0, 2, (b, 6, 7, 2), dtype=torch.int8), "action_mask": mask}
    out = model.act(obs, torch.zeros(b, 0))
    assert set(out.actions.tolist()) == {1, 4}
    assert torch.all(out.logits[:, [0, 2, 3, 5, 6]] <= -1e7)
    # evaluate over [T, B]: the learner's logits are masked too, and the mask's entries get no gradient
    tb = {k: v.view(4, 64, *v.shape[1:]) for k, v in obs.items()}
    logits, values = model.evaluate(tb, torch.zeros(4, 64, 0), torch.zeros(4, 64), 1)
    logits.retain_grad()
    model.distribution(logits, tb["action_mask"]).entropy().sum().backward()
    assert torch.all(logits.grad[..., [0, 2, 3, 5, 6]] == 0)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    # the normaliser is updated with stored observations, mask included
    model.obs_normalizer.update(tb)


def test_sample_legal_and_is_legal():
    rng_mask = np.array([0, 0, 1, 0, 1, 0, 0], np.int8)
    D7.seed(0)
    assert {int(sample_legal(D7, rng_mask)) for _ in range(100)} == {2, 4}
    assert is_legal(D7, rng_mask, 2) and not is_legal(D7, rng_mask, 3)
    assert is_legal(D7, np.zeros(7), 3)  # no legal entry: not this agent's turn
    md = gym.spaces.MultiDiscrete([2, 3])
    m = np.array([0, 1, 1, 0, 0])
    assert all(tuple(sample_legal(md, m)) == (1, 0) for _ in range(20))
    assert is_legal(md, m, [1, 0]) and not is_legal(md, m, [1, 1])
    assert split_obs({"observation": 1, "action_mask": 2}, "observation") == (1, 2)


class _InfoMaskEnv(gym.Env):
    """Discrete(4) actions; info["action_mask"] allows only action (step % 4)."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {"action_mask": np.eye(4, dtype=np.int8)[0]}

    def step(self, action):
        assert action == self.t % 4, "illegal action"
        self.t += 1
        return (
            np.zeros(2, np.float32),
            0.0,
            False,
            self.t >= 8,
            {"action_mask": np.eye(4, dtype=np.int8)[self.t % 4]},
        )


class _RlGamesMaskEnv(_InfoMaskEnv):
    """The same, with rl_games' has_action_mask()/get_action_mask() instead of info."""

    def has_action_mask(self):
        return True

    def get_action_mask(self):
        return np.eye(4, dtype=bool)[self.t % 4]


@pytest.mark.parametrize("make", [lambda: InfoActionMask(_InfoMaskEnv()), lambda: _RlGamesMaskEnv()])
def test_info_and_rl_games_masks_become_the_obs_entry(make):
    env = SingleAgentAsMultiAgent(make())
    assert set(env.observation_space.spaces) == {"observation", "action_mask"}
    obs, _ = env.reset(seed=0)
    for t in range(20):
        mask = obs[0]["action_mask"]
        assert int(np.argmax(mask)) == t % 8 % 4 and mask.sum() == 1
        obs, *_ = env.step([sample_legal(env.action_space, mask)])


def test_masked_logit_is_finite_and_zero_after_softmax():
    from surge.models.distributions import MASKED_LOGIT

    assert math.isfinite(MASKED_LOGIT)
    assert float(torch.softmax(torch.tensor([0.0, MASKED_LOGIT]), -1)[1]) == 0.0


class _LenientInfoMaskEnv(_InfoMaskEnv):
    def step(self, action):
        self.t += 1
        return (
            np.zeros(2, np.float32),
            0.0,
            False,
            self.t >= 8,
            {"action_mask": np.eye(4, dtype=np.int8)[self.t % 4]},
        )


def test_check_env_points_to_the_wrapper_for_info_masks_and_keeps_to_them():
    from surge.app.check_env import check_env

    found = check_env(_LenientInfoMaskEnv(), num_steps=20)
    assert any("surge.envs.action_masks:InfoActionMask" in w for w in found)
    notes: list[str] = []
    found = check_env(InfoActionMask(_InfoMaskEnv()), num_steps=20, notes=notes)  # raises on an illegal move
    assert not any("InfoActionMask" in w for w in found)
    assert any("4 entries for Discrete(4)" in n for n in notes), notes


def test_a_model_takes_the_plain_symmetric_kl_only_while_it_has_masked_nothing():
    masked, _ = _masked_model()
    assert not masked.distribution(torch.zeros(2, 7)).all_legal  # masks come in its observations
    cfg = Config(encoder_type="mlp", encoder_subtype="mlp", encoder_mlp_layers=[16], use_rnn=False)
    model = ActorCritic(cfg, gym.spaces.Box(-1, 1, (3,), np.float32), D7)
    assert model.distribution(torch.zeros(2, 7)).all_legal
    # an explicit mask to evaluate: from then on the KL is over the legal actions of its logits
    mask = torch.zeros(1, 2, 7, dtype=torch.bool)
    mask[..., [1, 4]] = True
    logits, _ = model.evaluate(
        torch.randn(1, 2, 3), torch.zeros(1, 2, 0), torch.zeros(1, 2), 1, action_mask=mask
    )
    dist = model.distribution(logits[0])
    assert not dist.all_legal
    legal = logits[0][:, [1, 4]]
    p, u = Categorical(logits=legal), Categorical(logits=torch.zeros_like(legal))
    expected = 0.5 * (kl_divergence(p, u) + kl_divergence(u, p))
    torch.testing.assert_close(dist.symmetric_kl_with_uniform(), expected, atol=1e-5, rtol=1e-5)
