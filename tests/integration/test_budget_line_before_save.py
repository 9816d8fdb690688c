"""A run that reaches its budget says so at once: the progress line with the final count comes
before the final checkpoint is written and the workers are closed, not after (a line printed only
after the close made every frame-budget benchmark count the shut-down as training time)."""

import re

from surge.app.resolve import parse_cfg
from tests.run_logged import run_logged


def test_the_budgets_progress_line_comes_before_the_final_checkpoint(tmp_path, caplog):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=4",
            "--rollout=32", "--batch_size=128", "--num_batches_per_iteration=1", "--ppo_epochs=1",
            "--train_for_env_steps=512", "--report_interval_sec=1000", "--save_every_sec=100000",
            f"--train_dir={tmp_path}", "--experiment=b",
        ]
    )  # fmt: skip
    status, msgs = run_logged(cfg, caplog)
    assert status == "done"
    saved = [i for i, m in enumerate(msgs) if m.startswith("Saved ") and "checkpoint_p0" in m]
    final = [i for i, m in enumerate(msgs) if re.search(r"Total env frames: 512 \(100\.0% of 512", m)]
    assert saved and final, msgs
    assert final[0] < saved[-1], msgs
