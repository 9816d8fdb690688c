"""Ctrl+C / SIGTERM are honoured within seconds whatever the settings (issue 14, defect 10): with
`--batch_size=2` and many epochs one batch trains for minutes, and the learner used to finish it
(and every queued one) before the final checkpoint. Child processes carry their role in their
process title (`surge:rollout_0`, ...), as Sample Factory's do."""

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from proc_tree import cmdline, descendants

ROOT = Path(__file__).resolve().parents[2]
STOP_WITHIN_SEC = 10.0


def _children_titles(pid: int) -> set[str]:
    """The command lines (process titles) of the descendants of `pid`."""
    return {cmdline(p) for p in descendants(pid)} - {""}


def _wait_for(proc, log: Path, pattern: str, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if log.exists() and re.search(pattern, log.read_text()):
            return
        assert proc.poll() is None, f"the run ended early:\n{log.read_text() if log.exists() else ''}"
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in the log after {timeout} s")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("serial_mode", ["False", "True"])
def test_sigterm_stops_a_run_with_tiny_batches_within_seconds(tmp_path, serial_mode):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "surge.cli",
            "train",
            "--env=cartpole",
            "--experiment=s",
            f"--train_dir={tmp_path}",
            f"--serial_mode={serial_mode}",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--batch_size=2",
            "--ppo_epochs=3000",  # one batch: tens of thousands of optimizer steps (200 ended within the 6 s wait on a fast machine)
            "--decorrelate_experience_max_seconds=0",
            "--set_workers_cpu_affinity=False",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = tmp_path / "s" / "surge_log.txt"
    try:
        # sampling has begun; a few seconds on, the learner is in its first (long) batch (in serial
        # mode this process trains it, so it prints no progress line meanwhile)
        _wait_for(proc, log, "Experiment folder" if serial_mode == "True" else "rollout workers reset", 90)
        if serial_mode == "False":
            # each child sets its title as it starts, so on a loaded machine one may still be
            # importing when the rollout workers report their reset
            roles = {"surge:rollout_0", "surge:learner_p0", "surge:inference_p0_0"}
            deadline = time.time() + 30.0
            while not roles <= (titles := _children_titles(proc.pid)) and time.time() < deadline:
                time.sleep(0.2)
            assert roles <= titles, titles
        time.sleep(6.0)
        t0 = time.time()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        took = time.time() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert took < STOP_WITHIN_SEC, f"took {took:.1f} s to stop\n{text[-3000:]}"  # before: 17 s / > 30 s
    assert "Signal 15 received" in text and "Stopped on request" in text
    assert list((tmp_path / "s" / "checkpoint_p0").glob("checkpoint_*.pth"))
    # the batch in training was left: the log says how much of it was trained
    assert re.search(r"Policy 0: stopping in the middle of a batch: \d+ of its \d+ optimizer steps", text)


def test_setproctitle_is_a_dependency():
    text = (ROOT / "pyproject.toml").read_text()  # (tomllib is Python 3.11+; surge supports 3.10)
    deps = re.search(r"^dependencies = \[(.*?)^\]", text, re.M | re.S).group(1)
    assert re.search(r'^\s*"setproctitle\b', deps, re.M), deps
