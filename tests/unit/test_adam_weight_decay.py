"""`--adam_weight_decay`: Adam's L2 term (torch.optim.Adam's weight_decay, rl_games' `weight_decay`)
in the learner's optimizer, against Adam's update written out (Kingma & Ba 2015, Algorithm 1, with
the penalty's gradient wd * theta added to the loss gradient)."""

from __future__ import annotations

import pytest
import torch
from rl_games_yaml_support import load
from torch import nn

from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import translate
from surge.cfg.config import Config
from surge.learning.base import make_adam


def test_three_steps_are_adam_with_an_l2_gradient():
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    cfg = Config(learning_rate=0.01, adam_eps=1e-8, adam_weight_decay=0.5)
    b1, b2, lr, wd, eps = cfg.adam_beta1, cfg.adam_beta2, 0.01, 0.5, 1e-8
    theta = [p.detach().clone().double() for p in model.parameters()]
    m = [torch.zeros_like(t) for t in theta]
    v = [torch.zeros_like(t) for t in theta]
    opt = make_adam(model, cfg, torch.device("cpu"))
    x = torch.randn(4, 3)
    for step in range(1, 4):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        grads = [p.grad.detach().double() for p in model.parameters()]
        opt.step()
        for i, g in enumerate(grads):  # the reference sees the same gradient, from the same weights
            g = g + wd * theta[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            m_hat, v_hat = m[i] / (1 - b1**step), v[i] / (1 - b2**step)
            theta[i] = theta[i] - lr * m_hat / (v_hat.sqrt() + eps)
        for p, t in zip(model.parameters(), theta, strict=True):
            torch.testing.assert_close(p.detach().double(), t, rtol=1e-5, atol=1e-6)


def test_rl_games_weight_decay_is_the_flag():
    # ppo_walker_rnn.yaml (its weight_decay 0.0001), its negative entropy_coef made 0
    data = load("ppo_walker_rnn.yaml")
    data["params"]["config"]["entropy_coef"] = 0
    assert translate(data, "ppo_walker_rnn.yaml").values["adam_weight_decay"] == 0.0001


def test_a_negative_entropy_coef_is_refused_by_its_key():
    with pytest.raises(RlGamesKeyError) as e:
        translate(load("ppo_walker_rnn.yaml"), "ppo_walker_rnn.yaml")
    assert e.value.field == "params.config.entropy_coef"
