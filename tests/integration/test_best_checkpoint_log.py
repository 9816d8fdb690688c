"""A run that writes many best checkpoints logs the first one only (issue 55, item 14: a 20 MB
`best` was written and logged every ~8 s while the return climbed); the later saves are at debug
level, as Sample Factory logs them."""

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.runtime.checkpoint import CheckpointManager


@pytest.mark.slow
def test_a_run_logs_its_first_best_once_not_every_best_it_writes(tmp_path, monkeypatch):
    # CartPole's return climbs from the first episodes; every check may write a best here
    cfg = parse_cfg(
        [
            "--env=cartpole",
            f"--train_dir={tmp_path}",
            "--experiment=best",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--train_for_env_steps=4000",
            "--save_best_after=0",
            "--save_best_every_sec=0",
            "--seed=0",
            "--num_torch_threads=1",
        ]
    )
    written: list[int] = []
    real_save = CheckpointManager.save

    def save(self, state, policy_version, env_frames, kind="checkpoint"):  # counts, then writes
        if kind == "best":
            written.append(env_frames)
        return real_save(self, state, policy_version, env_frames, kind)

    monkeypatch.setattr(CheckpointManager, "save", save)
    threads = torch.get_num_threads()
    try:
        assert train(cfg) == "done"
    finally:
        torch.set_num_threads(threads)  # the serial placement sets it in this process
    log_text = (tmp_path / "best" / "surge_log.txt").read_text()
    assert len(written) > 1, written  # several bests were written
    assert sum("best_v" in line for line in log_text.splitlines()) == 0, log_text
    assert log_text.count("first best checkpoint") == 1


@pytest.mark.slow
def test_an_async_run_logs_no_save_line_for_its_best_checkpoints(tmp_path):
    # the learner process writes the bests and reports each; the main process logs none of them at info
    cfg = parse_cfg(
        [
            "--env=cartpole",
            f"--train_dir={tmp_path}",
            "--experiment=best_async",
            "--num_workers=1",
            "--num_envs_per_worker=8",
            "--train_for_env_steps=30000",
            "--save_best_after=0",
            "--save_best_every_sec=0",
            "--seed=0",
        ]
    )
    assert train(cfg) == "done"
    log_text = (tmp_path / "best_async" / "surge_log.txt").read_text()
    assert log_text.count("first best checkpoint") == 1, log_text
    assert not [line for line in log_text.splitlines() if "Saved" in line and "best_v" in line], log_text
