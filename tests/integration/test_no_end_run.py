"""A run without a budget (an env family's, without `--train_for_env_steps`) says at its start that
it has no end, and Ctrl+C stops it with a checkpoint (issue 55, item 8; docs/defaults.md, "The
training budget"). A plain gymnasium id gets a budget instead: tests/unit/test_space_defaults_per_algo.py."""

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_run_without_a_budget_says_so_and_stops_on_ctrl_c_with_a_checkpoint(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        "--env=cartpole",
        "--experiment=open",
        f"--train_dir={tmp_path}",
        "--serial_mode=True",
        "--num_workers=1",
        "--num_envs_per_worker=2",
        "--decorrelate_experience_max_seconds=0",
        "--write_report=False",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    log = tmp_path / "open" / "surge_log.txt"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if log.exists() and re.search(r"Total env frames: [1-9]", log.read_text()):
                break
            time.sleep(0.3)
        else:
            raise AssertionError("no env frames reported within 120 s")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out[-3000:]  # 128 + SIGINT: stopped on request (docs/reliability.md)
    content = log.read_text()
    assert content.count("this run has no end") == 1, content[-3000:]
    assert "% of" not in content  # no budget: no percentage to report
    ckpt = sorted((tmp_path / "open" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    assert torch.load(ckpt, weights_only=True)["env_frames"] > 0
