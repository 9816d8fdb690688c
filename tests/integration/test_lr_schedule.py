"""The learning-rate schedule end to end: a training run passes its env-frame count to the learner,
so under `--lr_schedule=linear_decay` the rate saved with the last checkpoint has decayed towards
0 (lr · (1 - frames / train_for_env_steps)); under `constant` it has not."""

import pytest
import torch

from surge.cfg.cli import parse_cfg
from surge.runtime.training_run import train

LR, BUDGET = 1e-3, 4096


@pytest.mark.parametrize("schedule", ["constant", "linear_decay"])
def test_saved_learning_rate_follows_the_schedule(tmp_path, schedule):
    cfg = parse_cfg(
        [
            "--env=cartpole",
            "--experiment=lr",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--rollout=32",
            "--batch_size=128",
            "--num_batches_per_iteration=1",
            "--ppo_epochs=1",
            f"--learning_rate={LR}",
            f"--lr_schedule={schedule}",
            f"--train_for_env_steps={BUDGET}",
            "--seed=0",
        ]
    )
    assert train(cfg) == "done"
    ckpt = sorted((tmp_path / "lr" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    state = torch.load(ckpt, weights_only=True)
    lr = state["learner"]["optimizer"]["param_groups"][0]["lr"]
    if schedule == "constant":
        assert lr == pytest.approx(LR)
    else:
        # the last update came after at least 3/4 of the budget (batches of 128 of 4096 frames)
        assert 0.0 <= lr <= 0.25 * LR, lr
