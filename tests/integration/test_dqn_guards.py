"""Fast guards for DQN's pieces that a learning test would only catch slowly (each catches one
breakage of `benchmarks/break_learning.py`): the target-network update (SB3's rule:
every `target_update_interval` env steps, theta' <- tau theta + (1 - tau) theta'), epsilon's
schedule as Stable-Baselines3 computes it (`LinearSchedule` over `exploration_fraction` of the
budget), and a truncated step bootstrapping (discount gamma^L, not 0)."""

import copy

import gymnasium as gym
import pytest
import torch

from surge.algorithms.dqn.declaration import dqn_act
from surge.algorithms.dqn.learner import DQNLearner
from surge.algorithms.dqn.model import make_dqn_parts
from surge.app.resolve import parse_cfg
from surge.learning.algorithm import ActContext

BUDGET = 10_000


def _learner(tmp_path, *flags):
    cfg = parse_cfg(
        ["--env=CartPole-v1", "--algo=DQN", f"--train_dir={tmp_path}", "--encoder_mlp_layers", "8",
         "--batch_size=8", "--learning_starts=8", f"--train_for_env_steps={BUDGET}", "--seed=0", *flags]
    )  # fmt: skip
    torch.manual_seed(0)
    parts = make_dqn_parts(cfg, gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(2))
    return DQNLearner(
        cfg, parts.acting, None, torch.device("cpu"), 0, learner_modules=parts.learner_modules, num_columns=1
    )


def _block(T=8, seed=0, trunc_at=None):
    g = torch.Generator().manual_seed(seed)
    trunc = torch.zeros(T, 1)
    if trunc_at is not None:
        trunc[trunc_at, 0] = 1
    return {
        "obs": torch.randn(T + 1, 1, 4, generator=g),
        "actions": torch.randint(2, (T, 1), generator=g),
        "rewards": torch.ones(T, 1),
        "dones": trunc.clone(),
        "trunc": trunc,
        "is_active": torch.ones(T, 1, dtype=torch.bool),
        "behavior_version": torch.zeros(T, 1, dtype=torch.int64),
        "actor_ids": torch.zeros(1, dtype=torch.int64),
    }


@pytest.mark.parametrize("tau", [1.0, 0.25])
def test_target_network_follows_sb3s_rule(tmp_path, tau):
    learner = _learner(
        tmp_path, "--target_update_interval=16", f"--target_update_tau={tau}", "--replay_ratio=0.5"
    )
    learner.observe(_block(seed=0))
    learner.train_replay()  # 8 env steps: no target update yet
    assert learner.target_syncs == 0
    with torch.no_grad():  # a target that differs from the online network (as after training)
        for p in learner.target.parameters():
            p.add_(torch.randn_like(p))
    old_target = copy.deepcopy(learner.target.state_dict())
    online = copy.deepcopy(learner.online.state_dict())
    learner.observe(_block(seed=1))  # 16 env steps: one update, before this call's gradient steps
    stats = learner.train_replay()
    assert stats is not None and stats["target_updates"] == 1 and stats["updates_run"] > 0
    for k, v in learner.target.state_dict().items():
        expected = tau * online[k] + (1 - tau) * old_target[k]  # SB3's polyak_update
        assert torch.allclose(v, expected, atol=1e-6), k
    assert not torch.equal(learner.online.state_dict()["out.weight"], online["out.weight"])  # trained after


def test_epsilon_schedule_matches_sb3(tmp_path):
    from stable_baselines3.common.utils import LinearSchedule

    learner = _learner(tmp_path, "--exploration_fraction=0.5", "--exploration_final_eps=0.1")
    model = learner.model
    sb3 = LinearSchedule(1.0, 0.1, 0.5)  # of progress_remaining = 1 - frames / budget
    obs = torch.zeros(20_000, 4)
    rnn = torch.zeros(20_000, 0)
    with torch.no_grad():
        greedy = model.q(obs[:1]).q_values.argmax(-1).item()
    for frames in (0, 2_000, 4_000, 6_000):
        eps = sb3(1.0 - frames / BUDGET)
        assert model.eps(frames) == pytest.approx(eps)
        torch.manual_seed(frames)
        actions = dqn_act(model, obs, rnn, ActContext(env_frames=frames))["actions"]
        non_greedy = float((actions != greedy).float().mean())  # a random action is greedy half the time
        assert non_greedy == pytest.approx(eps / 2, abs=0.015), frames
    assert bool((dqn_act(model, obs, rnn, ActContext(deterministic=True))["actions"] == greedy).all())


def test_per_actor_epsilon_is_ape_x(tmp_path):
    learner = _learner(tmp_path, "--per_actor_eps=True")
    ctx = ActContext(actor_ids=torch.tensor([0, 3, 7]), num_actors=8, env_frames=0)
    eps = learner.model.epsilon(ctx)
    assert torch.allclose(eps, torch.tensor([0.4, 0.4**4, 0.4**8]))  # 0.4^(1 + 7 i / 7)


def test_a_truncated_step_bootstraps(tmp_path):
    learner = _learner(tmp_path, "--n_step_return=1", "--gamma=0.5")
    learner.observe(_block(trunc_at=3))
    learner.cfg.batch_size = 256
    s = learner.sample()
    at = s["rows"] == 3
    assert bool(at.any())
    assert torch.allclose(s["discounts"][at], torch.tensor(0.5))  # gamma^1, bootstrapped
    assert torch.equal(s["next_obs"][at][0], s["obs"][at][0])  # from its own observation
