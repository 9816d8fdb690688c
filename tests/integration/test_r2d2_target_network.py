"""R2D2's target network moves by the rule (Kapturowski et al. 2019 keep DQN's periodic target
update; surge's: every `target_update_interval` env steps, theta' <- tau theta + (1 - tau) theta',
SB3's `polyak_update`): it does not move before the interval, and after it equals that average of
the online and the old target network exactly (hard copy at tau = 1)."""

import copy

import gymnasium as gym
import pytest
import torch

from surge.algorithms.r2d2.learner import R2D2Learner
from surge.algorithms.r2d2.model import make_r2d2_parts
from surge.app.resolve import parse_cfg

T, N_COLS = 8, 2  # one block: 16 env steps


def _learner(tmp_path, tau):
    cfg = parse_cfg(
        ["--env=CartPole-v1", "--algo=R2D2", f"--train_dir={tmp_path}", "--batch_size=4",
         "--encoder_mlp_layers", "8", "--hidden_size=8", "--rnn_type=gru", "--burn_in=0",
         "--sequence_length=4", "--n_step_return=1", "--store_rnn_state_interval=2", "--replay_size=64",
         f"--rollout={T}", f"--recurrence={T}", "--learning_starts=8", "--replay_ratio=0.25",
         f"--target_update_interval={2 * T * N_COLS}", f"--target_update_tau={tau}", "--seed=0"]
    )  # fmt: skip
    torch.manual_seed(0)
    parts = make_r2d2_parts(cfg, gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(2))
    return R2D2Learner(
        cfg, parts.acting, None, torch.device("cpu"), 0, learner_modules=parts.learner_modules,
        num_columns=N_COLS,
    )  # fmt: skip


def _block(state_size, seed):
    g = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.randn(T + 1, N_COLS, 4, generator=g),
        "rnn_states": torch.randn(T + 1, N_COLS, state_size, generator=g),
        "actions": torch.randint(2, (T, N_COLS), generator=g),
        "rewards": torch.ones(T, N_COLS),
        "dones": torch.zeros(T, N_COLS),
        "trunc": torch.zeros(T, N_COLS),
        "is_active": torch.ones(T, N_COLS, dtype=torch.bool),
        "behavior_version": torch.zeros(T, N_COLS, dtype=torch.int64),
        "actor_ids": torch.arange(N_COLS),
    }


@pytest.mark.parametrize("tau", [1.0, 0.25])
def test_r2d2_target_network_moves_by_the_rule_at_the_interval(tmp_path, tau):
    learner = _learner(tmp_path, tau)
    with torch.no_grad():  # a target that differs from the online network (as after training)
        for p in learner.target.parameters():
            p.add_(torch.randn_like(p))
    S = learner.online.rnn_state_size
    before = copy.deepcopy(learner.target.state_dict())
    learner.observe(_block(S, seed=0))  # 16 env steps: half the interval
    stats = learner.train_replay()
    assert stats is not None and stats["updates_run"] > 0 and stats["target_updates"] == 0
    for k, v in learner.target.state_dict().items():  # trained, but the target did not move
        assert torch.equal(v, before[k]), k
    online = copy.deepcopy(learner.online.state_dict())
    learner.observe(_block(S, seed=1))  # 32 env steps: one update, before this call's gradient steps
    stats = learner.train_replay()
    assert stats is not None and stats["target_updates"] == 1 and stats["updates_run"] > 0
    for k, v in learner.target.state_dict().items():
        expected = tau * online[k] + (1 - tau) * before[k]
        torch.testing.assert_close(v, expected, atol=1e-6, rtol=0, msg=k)
