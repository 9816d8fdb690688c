"""benchmarks/startup.py: the end of start-up it reads for each framework. surge's side runs for
real (a cartpole run in the async placement, stopped at its first trained batch); Sample Factory's
side reads TensorBoard events, checked on a file written here with TensorBoard's own writer (Sample
Factory itself is not installed in CI: `sf_setup.sh` puts it in a venv of its own)."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from startup import (  # noqa: E402
    CONFIGS,
    ROOT,
    _pythonpath,
    sf_first_trained,
    surge_command,
    surge_first_trained,
    time_to_first_batch,
)


@pytest.mark.slow
def test_surge_run_is_stopped_at_its_first_trained_batch(tmp_path):
    log = tmp_path / "console.txt"
    env = {**os.environ, "PYTHONPATH": _pythonpath(ROOT)}
    t0 = time.time()
    s = time_to_first_batch(
        surge_command(CONFIGS["cartpole"], tmp_path), tmp_path, lambda: surge_first_trained(log), 120, env
    )
    elapsed = time.time() - t0
    assert 0 < s < elapsed, (s, elapsed)
    text = log.read_text()
    lines = [ln for ln in text.splitlines() if "LearnerLoop: first" in ln]
    # the learner's loop started, then its first batch was trained, and the line comes once
    assert [("first step" in ln, "first batch trained" in ln) for ln in lines] == [
        (True, False),
        (False, True),
    ], lines
    # stopped (SIGTERM: a clean stop that still reports its throughput) long before its budget ran out
    done = re.search(r"Throughput: (\d+) env frames", text)
    assert done is None or int(done.group(1)) < CONFIGS["cartpole"].frames / 2, done


def test_sf_side_reads_the_first_train_scalar_not_the_first_event(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(tmp_path / "sf" / ".summary" / "0"))
    w.add_scalar("perf/_fps", 10.0, 0, walltime=1000.0)
    w.add_scalar("train/loss", 1.0, 5, walltime=1002.5)
    w.add_scalar("train/loss", 0.5, 9, walltime=1004.0)
    w.close()
    assert sf_first_trained(tmp_path) == pytest.approx(1002.5)
    assert sf_first_trained(tmp_path / "missing") is None


def test_surge_side_reads_the_log_line_time(tmp_path):
    log = tmp_path / "console.txt"
    assert surge_first_trained(log) is None
    log.write_text(
        "[2026-12-03 06:17:07,689][INFO] LearnerLoop: first step (pid 1, policy 0)\n"
        "[2026-12-03 06:17:07,730][INFO] LearnerLoop: first batch trained (policy 0, policy version 16)\n"
    )
    got = surge_first_trained(log)
    ref = time.mktime(time.strptime("2026-12-03 06:17:07", "%Y-%m-%d %H:%M:%S")) + 0.730
    assert got == pytest.approx(ref)
