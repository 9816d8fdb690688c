"""A2C's critic cannot move its policy (issue 20; docs/logs/a2c_stability_2026-11-24_critic.md).

With A2C's defaults (raw returns, no normalisation) the value term's gradient on an encoder shared
with the actor was 7-660x the policy term's on CartPole-v1, and Adam's per-weight step then follows
the critic: the shared layers learned value features only and the run reached 275 at 2M frames. A2C
now gives the critic its own encoder by default. These tests take an optimizer step on the value term
alone, with the targets far from the critic as raw CartPole returns are (~100), and check that the
policy's logits do not move (with a shared encoder they do: the last test shows it).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.learning.base import make_adam
from surge.models.actor_critic import make_actor_critic

OBS_SPACE = gym.spaces.Box(-5.0, 5.0, (4,), np.float32)  # CartPole-v1's
ACTION_SPACE = gym.spaces.Discrete(2)


def _logits_after_value_step(cfg) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logits, values) of a fixed batch `[T=5, B=8]` before and after one Adam step on the value
    term `0.5 (V - 100)^2` alone."""
    torch.manual_seed(0)
    model = make_actor_critic(cfg, OBS_SPACE, ACTION_SPACE)
    obs = torch.randn(5, 8, 4)
    states = torch.zeros(5, 8, model.rnn_state_size)
    dones = torch.zeros(5, 8)
    logits0, values0 = (x.detach().clone() for x in model.evaluate(obs, states, dones, 1))
    opt = make_adam(model, cfg, torch.device("cpu"))
    _, values = model.evaluate(obs, states, dones, 1)
    (cfg.value_loss_coeff * 0.5 * (values - 100.0).pow(2).mean()).backward()
    opt.step()
    with torch.no_grad():
        logits1, values1 = model.evaluate(obs, states, dones, 1)
    return logits0, logits1, values0, values1


@pytest.mark.parametrize("env", ["CartPole-v1", "cartpole"])  # plain gymnasium id, surge's family
def test_a2c_default_critic_has_its_own_encoder(tmp_path, env):
    # raw returns (the default is normalised since 2026-11-25): the case the separate critic is for
    cfg = parse_cfg([f"--env={env}", "--algo=A2C", "--normalize_returns=False", f"--train_dir={tmp_path}"])
    assert cfg.actor_critic_share_weights is False
    logits0, logits1, values0, values1 = _logits_after_value_step(cfg)
    assert torch.equal(logits0, logits1)  # the value term moved no weight the policy reads
    assert (values1 - values0).abs().min() > 0  # ... and did move the critic


def test_a2c_shared_encoder_flag_still_acts(tmp_path):
    """`--actor_critic_share_weights=True` still gives the shared encoder, whose policy the value
    term moves (the old default's failure mode, and the check that the test above can fail)."""
    cfg = parse_cfg(
        ["--env=CartPole-v1", "--algo=A2C", "--actor_critic_share_weights=True", f"--train_dir={tmp_path}"]
    )
    logits0, logits1, _, _ = _logits_after_value_step(cfg)
    assert (logits1 - logits0).abs().max() > 1e-4


def test_a2c_shares_a_conv_encoder_by_default_and_separates_an_mlp_one():
    # rlpyt's Atari A2C model shares its conv trunk; two conv encoders would double every step
    atari = parse_cfg(["--algo=A2C", "--env=atari_breakout", "--experiment=x"])
    assert atari.encoder_type == "conv" and atari.actor_critic_share_weights is True
    cartpole = parse_cfg(["--algo=A2C", "--env=CartPole-v1", "--experiment=x"])
    assert cartpole.actor_critic_share_weights is False
    explicit = parse_cfg(
        ["--algo=A2C", "--env=atari_breakout", "--experiment=x", "--actor_critic_share_weights=False"]
    )
    assert explicit.actor_critic_share_weights is False
    appo = parse_cfg(["--env=atari_breakout", "--experiment=x"])  # APPO keeps the core default
    assert appo.actor_critic_share_weights is True
