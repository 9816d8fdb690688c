"""The learner on tiny envs: it improves the policy under GAE and V-trace, and masks stale samples."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.envs.registry import register_env
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler


class Bandit(gym.Env):
    """One-step episodes; action 1 pays 1, action 0 pays 0."""

    observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.ones(2, np.float32), {}

    def step(self, action):
        return np.ones(2, np.float32), float(action), True, False, {}


register_env("bandit", lambda name, cfg, render_mode=None: Bandit())


def _components(tmp_path, *extra):
    cfg = parse_cfg(
        [
            "--env=bandit",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--rollout=8",
            "--batch_size=32",
            "--learning_rate=0.01",
            "--seed=1",
            "--encoder_type=mlp",
            "--encoder_mlp_layers",
            "16",
            *extra,
        ]
    )
    return cfg, build_components(cfg)


ESTIMATORS = {
    "gae": ["--with_vtrace=False", "--use_rnn=False", "--recurrence=1"],
    "vtrace_rnn": ["--with_vtrace=True", "--use_rnn=True", "--recurrence=8", "--hidden_size=16"],
    "gae_normalized_returns": [
        "--with_vtrace=False",
        "--use_rnn=False",
        "--recurrence=1",
        "--normalize_returns=True",
    ],
    "vtrace_normalized_returns": [
        "--with_vtrace=True",
        "--use_rnn=False",
        "--recurrence=8",
        "--normalize_returns=True",
    ],
}


@pytest.mark.parametrize("estimator", list(ESTIMATORS))
def test_policy_learns_the_paying_arm(tmp_path, estimator):
    cfg, c = _components(tmp_path, *ESTIMATORS[estimator])
    sampler = SerialSampler(c)
    for _ in range(40):
        slots = None
        while slots is None:
            sampler.step()
            slots = sampler.take()
        c.learner.train(slots)
        sampler.release(slots)
        c.inference.policy_version = c.learner.policy_version
    out = c.model.act(torch.ones(64, 2), torch.zeros(64, c.model.rnn_state_size))
    assert out.actions.float().mean() > 0.9
    assert c.learner.policy_version == 40
    if c.model.returns_normalizer is not None:  # returns are 0 or 1 per one-step episode
        assert 0.5 < float(c.model.returns_normalizer.mean) <= 1.0
    c.close()


def test_samples_older_than_max_policy_lag_are_masked(tmp_path):
    cfg, c = _components(
        tmp_path, "--with_vtrace=False", "--use_rnn=False", "--recurrence=1", "--max_policy_lag=5"
    )
    sampler = SerialSampler(c)
    slots = None
    while slots is None:
        sampler.step()
        slots = sampler.take()
    c.learner.policy_version = 6  # every sample was produced by version 0: lag 6 > 5
    b = c.learner.prepare_batch(slots)
    c.learner._mask_stale(b)
    assert b["valids"].sum() == 0 and b["lag"].min() == 6
    before = [p.detach().clone() for p in c.model.parameters()]
    stats = c.learner.train(slots)
    assert stats["policy_lag_min"] == 6
    # all samples masked: only the (zero) masked losses flow, parameters do not move
    assert all(torch.equal(a, p) for a, p in zip(before, c.model.parameters(), strict=True))
    c.close()


def test_adam_is_fused_on_cpu_and_matches_the_reference_update(tmp_path):
    """The learner's Adam uses torch's fused kernel (also after loading a checkpoint whose optimizer
    state was saved without it) and takes the same step as torch's reference per-tensor Adam."""
    cfg, comps = _components(tmp_path, *ESTIMATORS["gae"])
    learner = comps.learner
    assert all(g["fused"] for g in learner.optimizer.param_groups)

    reference = torch.optim.Adam(
        [p.detach().clone().requires_grad_() for p in comps.model.parameters()],
        lr=cfg.learning_rate,
        betas=(cfg.adam_beta1, cfg.adam_beta2),
        eps=cfg.adam_eps,
        foreach=False,
    )
    torch.manual_seed(0)
    for _ in range(3):
        grads = [torch.randn_like(p) for p in comps.model.parameters()]
        for p, q, g in zip(comps.model.parameters(), reference.param_groups[0]["params"], grads, strict=True):
            p.grad, q.grad = g.clone(), g.clone()
        learner.optimizer.step()
        reference.step()
    for p, q in zip(comps.model.parameters(), reference.param_groups[0]["params"], strict=True):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6)

    old_style = reference.state_dict()  # saved by a per-tensor Adam
    assert not old_style["param_groups"][0]["fused"]
    learner.load_state_dict({"optimizer": old_style, "policy_version": 7})
    assert all(g["fused"] for g in learner.optimizer.param_groups)
    assert learner.policy_version == 7
