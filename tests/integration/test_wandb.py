"""Weights & Biases mirrors the TensorBoard summaries (offline mode: no network needed)."""

import importlib.util
import time

import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("wandb") is None, reason="wandb not installed")
def test_with_wandb_logs_the_summaries_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    args = [
        "--env=cartpole",
        "--experiment=wb",
        f"--train_dir={tmp_path}",
        "--serial_mode=True",
        "--num_workers=1",
        "--with_wandb=True",
        "--wandb_tags",
        "a",
        "b",
        "--experiment_summaries_interval=1",
    ]
    assert train(parse_cfg([*args, "--train_for_env_steps=3000"])) == "done"
    runs = list((tmp_path / "wb" / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(runs) == 1
    # wandb's service process may still be writing its transaction log when finish() returns
    deadline = time.time() + 30
    while b"losses/policy_loss" not in (data := runs[0].read_bytes()) and time.time() < deadline:
        time.sleep(0.5)
    assert b"episode/return_mean" in data and b"losses/policy_loss" in data
    run_id = (tmp_path / "wb" / "wandb_run_id").read_text()
    assert run_id in runs[0].name  # resuming reuses this id
