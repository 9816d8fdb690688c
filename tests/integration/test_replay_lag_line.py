"""The console line of a replay algorithm says what its policy-lag figures are: the age of the
replayed samples in policy versions, min/mean/max, not an on-policy lag."""

import re

import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train


@pytest.mark.slow
def test_a_dqn_run_reports_the_replayed_samples_age_with_its_unit(tmp_path):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            "--algo=DQN",
            "--experiment=dqn",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--learning_starts=200",
            "--encoder_mlp_layers",
            "32",
            "--save_replay_buffer=False",
            "--num_torch_threads=1",
            "--train_for_env_steps=2000",
        ]
    )
    assert train(cfg) == "done"
    log = (tmp_path / "dqn" / "surge_log.txt").read_text()
    found = re.findall(
        r"Replayed samples' age in policy versions \(([^)]*)\), min/mean/max [^:]*: (\d+)/([\d.]+)/(\d+)", log
    )
    assert found, log[-3000:]
    assert "Policy lag (min/avg/max)" not in log
    low, mean, high = (float(x) for x in found[-1][1:])
    assert 0 <= low <= mean <= high
