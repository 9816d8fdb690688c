"""R2D2 with `--use_prev_action_reward`: the sequences its replay gives the learner carry each
step's previous action and reward as acting saw them (zero after an episode's end), and its
Q-network's core reads them after the encoder's features (rlpyt's R2D1).

Checked on every sequence the learner sampled in a short serial run on CartPole-v1, against the
rule itself applied to the sequence's own actions, rewards and episode ends."""

from __future__ import annotations

import torch

from surge.algorithms.r2d2.model import make_r2d2_parts
from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun
from surge.envs.registry import make_env
from surge.replay.sequence import SequenceReplay


def run_spaces(cfg):
    """(observation space, action space) of one agent of the run's env, as the run makes it."""
    env = make_env(cfg)
    spaces = env.observation_space, env.action_space
    env.close()
    return spaces


def test_r2d2_replays_the_previous_action_and_reward_with_each_sequence(tmp_path, monkeypatch):
    sampled = []
    sample = SequenceReplay.sample

    def recording_sample(self, *args, **kwargs):
        s = sample(self, *args, **kwargs)
        sampled.append(s)
        return s

    monkeypatch.setattr(SequenceReplay, "sample", recording_sample)
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            "--algo=R2D2",
            "--use_prev_action_reward=True",
            f"--train_dir={tmp_path}",
            "--experiment=r2d2_prev",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--rollout=28",
            "--recurrence=28",
            "--burn_in=2",
            "--sequence_length=5",
            "--store_rnn_state_interval=4",
            "--n_step_return=2",
            "--batch_size=8",
            "--replay_size=2000",
            "--learning_starts=200",
            "--replay_ratio=0.1",
            "--hidden_size=16",
            "--encoder_mlp_layers",
            "16",
            "--decorrelate_experience_max_seconds=0",
            "--num_torch_threads=1",
            "--write_report=False",
            "--seed=5",
            "--train_for_env_steps=900",
        ]
    )
    run = TrainingRun(cfg)
    assert run.run() == "done"
    assert sampled
    ends = 0
    for s in sampled:
        prev_a, prev_r = s.obs["prev_action"], s.obs["prev_reward"][..., 0]  # [S+1, B, 2], [S+1, B]
        onehot = torch.nn.functional.one_hot(s.actions, 2).float()  # [S, B, 2]
        done = s.terminated | s.truncated
        # step s+1's inputs: step s's action and reward, or zeros when an episode ended at s
        expect_a = torch.where(done[..., None], 0.0, onehot)
        expect_r = torch.where(done, 0.0, s.rewards)
        torch.testing.assert_close(prev_a[1:], expect_a, rtol=0, atol=0)
        torch.testing.assert_close(prev_r[1:], expect_r, rtol=0, atol=0)
        ends += int(done.sum())
    assert ends > 0  # episode starts inside the sequences checked
    # the Q-network's core input: the encoder's features, then the previous action and reward
    q = make_r2d2_parts(cfg, run_spaces(cfg)[0], run_spaces(cfg)[1]).acting.q
    assert q.core.rnn.input_size == q.features.encoder.out_size + 3
    obs = sampled[-1].obs
    feats, _ = q.features(obs, lead_dims=2)
    expected = torch.cat([obs["prev_action"], obs["prev_reward"]], dim=-1)
    torch.testing.assert_close(feats[..., -3:], expected, rtol=0, atol=0)
