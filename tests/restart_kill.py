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

ROOT = Path(__file__).resolve().parents[1]


def command(args: list[str], train_dir: Path, preload: str | None = None) -> list[str]:
    """`python -m surge.train ARGS --train_dir=TRAIN_DIR`; with `preload`, that module of tests/
    (an env it registers: `two_player_toy`) is imported first (serial runs: no child imports it)."""
    if preload is None:
        return [sys.executable, "-m", "surge.train", *args, f"--train_dir={train_dir}"]
    code = (
        f"import sys, runpy; sys.path.insert(0, {str(ROOT / 'tests')!r}); import {preload}; "
        "runpy.run_module('surge.train', run_name='__main__', alter_sys=True)"
    )
    return [sys.executable, "-c", code, *args, f"--train_dir={train_dir}"]


def start(args: list[str], train_dir: Path, preload: str | None = None) -> subprocess.Popen:
    """`command` in a subprocess (output discarded: the run's log is `surge_log.txt`)."""
    return subprocess.Popen(
        command(args, train_dir, preload), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def run(
    args: list[str], train_dir: Path, preload: str | None = None, timeout: float = 240
) -> subprocess.CompletedProcess:
    """`command` run to its end; its output captured."""
    return subprocess.run(
        command(args, train_dir, preload), cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


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


def kill_if_running(proc: subprocess.Popen) -> None:
    """Kills the run if a failed assertion left it running."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)


#: the budget of a run that a signal stops: never reached, so that a fast machine cannot finish the
#: run before the signal (its resume then runs to `resume_budget`)
UNREACHED = 10**8


def resume_budget(folder: Path, more: int = 2000) -> int:
    """`--train_for_env_steps` for the resume: `more` env frames past the latest checkpoint of
    policy 0 (the frames are in its name, `checkpoint_v<version>_f<frames>.pth`)."""
    latest = sorted((folder / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    return int(latest.stem.split("_f")[1]) + more
