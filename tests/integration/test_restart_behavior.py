"""What to do with an existing experiment folder is the command's choice, never the saved config's."""

import json
import re
from pathlib import Path

import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train


def _cfg(tmp_path, *extra):
    return parse_cfg(
        [
            "--env=cartpole",
            "--experiment=exp",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--seed=0",
            "--train_for_env_steps=1000",
            "--ppo_epochs=1",
            "--hidden_size=16",
            "--encoder_mlp_layers=16",
            *extra,
        ]
    )


def _checkpoints(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "checkpoint_p0").glob("checkpoint_*.pth"))


def test_restart_is_not_saved_and_a_plain_rerun_keeps_the_run(tmp_path):
    exp = tmp_path / "exp"
    assert train(_cfg(tmp_path, "--restart_behavior=restart")) == "done"
    before = _checkpoints(exp)
    log_before = (exp / "surge_log.txt").read_text()
    assert before

    assert train(_cfg(tmp_path)) == "already_done"
    assert _checkpoints(exp) == before
    assert (exp / "surge_log.txt").read_text().startswith(log_before)
    assert "restart_behavior" not in json.loads((exp / "cfg.json").read_text())


def test_saved_overwrite_does_not_make_a_plain_rerun_ignore_done(tmp_path):
    assert train(_cfg(tmp_path, "--restart_behavior=overwrite")) == "done"
    assert train(_cfg(tmp_path)) == "already_done"


def test_an_old_cfg_json_holding_restart_behavior_is_ignored(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    saved = _cfg(tmp_path).to_dict()
    saved["restart_behavior"] = "restart"
    (exp / "cfg.json").write_text(json.dumps(saved))
    assert _cfg(tmp_path).restart_behavior == "resume"
    assert _cfg(tmp_path, "--restart_behavior=overwrite").restart_behavior == "overwrite"


def _all_checkpoints(folder: Path) -> dict[str, int]:
    import torch

    return {
        p.name: int(torch.load(p, weights_only=True)["env_frames"])
        for p in (folder / "checkpoint_p0").glob("*.pth")
    }


@pytest.mark.slow
def test_overwrite_removes_the_previous_runs_checkpoints_and_a_resume_continues_the_new_run(tmp_path):
    exp = tmp_path / "exp"
    assert train(_cfg(tmp_path, "--train_for_env_steps=2000")) == "done"
    old = _all_checkpoints(exp)
    old_events = set((exp / "summaries" / "0").iterdir())
    assert max(old.values()) >= 2000 and old_events

    assert train(_cfg(tmp_path, "--restart_behavior=overwrite", "--train_for_env_steps=500")) == "done"
    new = _all_checkpoints(exp)
    assert new and not set(new) & set(old)
    assert max(new.values()) < 2000
    assert not old_events & set((exp / "summaries" / "0").iterdir())

    (exp / "done").unlink()
    assert train(_cfg(tmp_path, "--train_for_env_steps=1000")) == "done"
    log = (exp / "surge_log.txt").read_text()
    assert re.search(rf"[Rr]esumed (from|at) env frame {max(new.values())}\b", log)
    assert not re.search(rf"[Rr]esumed (from|at) env frame {max(old.values())}\b", log)
