"""Helpers of the restart tests (issue 59, item 3): a `surge train` run in a subprocess, stopped by
a signal at a seeded random moment after its first checkpoint, then resumed.

SIGINT is the clean stop (exit 130, final checkpoint and every state file written at the stop);
SIGKILL leaves what was on disk at that moment, which the resume must load as it was.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def start(args: list[str], train_dir: Path) -> subprocess.Popen:
    """`python -m surge.train ARGS --train_dir=TRAIN_DIR` in a subprocess (output discarded: the
    run's log is `surge_log.txt` in its folder)."""
    return subprocess.Popen(
        [sys.executable, "-m", "surge.train", *args, f"--train_dir={train_dir}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )


def run(args: list[str], train_dir: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """The same command run to its end; its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "surge.train", *args, f"--train_dir={train_dir}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(),
    )


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("SDL_VIDEODRIVER", "dummy")
    env.setdefault("SDL_AUDIODRIVER", "dummy")
    return env


def stop_after_first_checkpoint(
    proc: subprocess.Popen, folder: Path, sig: int, seed: int, max_delay: float, timeout: float = 120
) -> float:
    """Waits for the run's first checkpoint of policy 0, then `uniform(0, max_delay)` seconds drawn
    from `random.Random(seed)`, and sends `sig`. Returns the delay. Raises AssertionError when the
    run ended before the signal (the test's budget is then too short for the machine)."""
    deadline = time.time() + timeout
    while not list((folder / "checkpoint_p0").glob("checkpoint_*.pth")):
        assert proc.poll() is None, f"the run exited ({proc.returncode}) before its first checkpoint"
        assert time.time() < deadline, "no checkpoint in time"
        time.sleep(0.05)
    delay = random.Random(seed).uniform(0.0, max_delay)
    time.sleep(delay)
    assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before the signal: raise its budget"
    proc.send_signal(sig)
    code = proc.wait(timeout=120)
    assert code == (130 if sig == signal.SIGINT else -signal.SIGKILL), code
    return delay


def kill_group_leftovers(proc: subprocess.Popen) -> None:
    """Kills the run if a failed assertion left it running."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)
