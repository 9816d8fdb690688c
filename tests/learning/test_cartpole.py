"""Learning test: serial APPO (PPO with GAE) solves CartPole-v1 within a fixed frame budget."""

import numpy as np
import pytest

from surge.cfg.cli import parse_cfg
from surge.enjoy import enjoy
from surge.runtime.training_run import train


@pytest.mark.slow
def test_cartpole_reaches_475_within_300k_frames(tmp_path):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            "--experiment=cp",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=2",
            "--num_envs_per_worker=8",
            "--train_for_env_steps=300000",
            "--seed=3",
            "--encoder_type=mlp",
            "--encoder_subtype=mlp",
            "--encoder_mlp_layers",
            "64",
            "64",
            "--use_rnn=False",
            "--recurrence=1",
            "--with_vtrace=False",
            "--nonlinearity=tanh",
            "--batch_size=128",
            "--num_batches_per_iteration=4",
            "--ppo_epochs=4",
            "--learning_rate=3e-4",
            "--max_grad_norm=0.5",
            "--reward_scale=0.1",
            "--exploration_loss_coeff=0.01",
        ]
    )
    assert train(cfg) == "done"
    ev = parse_cfg(
        [
            "--env=CartPole-v1",
            "--experiment=cp",
            f"--train_dir={tmp_path}",
            "--max_num_episodes=10",
            "--no_render=True",
            "--eval_deterministic=True",
        ],
        evaluation=True,
    )
    returns = enjoy(ev)["returns"]
    assert np.mean(returns) >= 475, returns
