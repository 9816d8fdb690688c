"""A run that reaches its budget says so at once: the progress line with the final count comes
before the final checkpoint is written and the workers are closed, not after (a line printed only
after the close made every frame-budget benchmark count the shut-down as training time)."""

import logging
import re

from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun


def test_the_budgets_progress_line_comes_before_the_final_checkpoint(tmp_path, caplog):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=4",
            "--rollout=32", "--batch_size=128", "--num_batches_per_iteration=1", "--ppo_epochs=1",
            "--train_for_env_steps=512", "--report_interval_sec=1000", "--save_every_sec=100000",
            f"--train_dir={tmp_path}", "--experiment=b",
        ]
    )  # fmt: skip
    surge_log = logging.getLogger("surge")  # it does not propagate to the root logger
    surge_log.addHandler(caplog.handler)
    try:
        assert TrainingRun(cfg).run() == "done"
    finally:
        surge_log.removeHandler(caplog.handler)
    msgs = caplog.messages
    saved = [i for i, m in enumerate(msgs) if m.startswith("Saved ") and "checkpoint_p0" in m]
    final = [i for i, m in enumerate(msgs) if re.search(r"Total env frames: 512 \(100\.0% of 512", m)]
    assert saved and final, msgs
    assert final[0] < saved[-1], msgs
