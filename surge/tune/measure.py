"""One measurement of `surge tune`: a run of a config in its own process group (`surge.tune.child`),
stopped by `--train_for_seconds` and, should it hang, by a wall-clock limit; its env frames/s after
start-up come from the run's summary (`TrainingRun.summary`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import surge

#: flags of every measurement: no checkpoints or summaries, all workers start at once (a random
#: start delay would be counted in the rate), a fresh folder
MEASURE_FLAGS = ("--no_writes=True", "--decorrelate_experience_max_seconds=0", "--restart_behavior=restart")
#: seconds a measurement may take beyond its `--train_for_seconds` before it is killed (start-up of
#: workers and of the learner on a loaded machine, and shut-down)
GRACE_SECONDS = 120.0


@dataclass
class Measurement:
    """env frames/s after start-up (nan: failed, killed, or too short for a rate), the wall-clock
    seconds of the whole process, and why it has no rate (None when it has one)."""

    rate: float
    wall_seconds: float
    error: str | None = None


def measure(
    flags: list[str], seconds: int, folder: Path, name: str, limit_seconds: float | None = None
) -> Measurement:
    """Runs `python -m surge.tune.child` with `flags` for `seconds` of training (wall clock from
    the run's start, `--train_for_seconds`) in `folder/name`, its output in `folder/name.log`; the
    process group is stopped after `limit_seconds` of wall clock (default: `seconds` +
    `GRACE_SECONDS`). The child gets SIGTERM should this process die (`surge.tune.child`).

    Raises:
        KeyboardInterrupt: after stopping the run's processes (SIGTERM to its process group, then
            SIGKILL), so that Ctrl+C leaves none behind.
    """
    folder.mkdir(parents=True, exist_ok=True)
    result = folder / f"{name}.json"
    cmd = [
        sys.executable,
        "-m",
        "surge.tune.child",
        str(result),
        *flags,
        *MEASURE_FLAGS,
        f"--train_for_seconds={seconds}",
        f"--train_dir={folder}",
        f"--experiment={name}",
    ]
    root = str(Path(surge.__file__).resolve().parent.parent)
    limit = seconds + GRACE_SECONDS if limit_seconds is None else limit_seconds
    env = {
        **os.environ,
        "SURGE_TUNE_PARENT": str(os.getpid()),
        "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    }
    t0 = time.time()
    with open(folder / f"{name}.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return Measurement(float("nan"), time.time() - t0, f"killed after {limit:.0f} s")
        except BaseException:  # Ctrl+C: stop the run, then let the caller stop too
            _stop(proc)
            raise
    wall = time.time() - t0
    try:
        summary = json.loads(result.read_text())
    except (OSError, ValueError):
        return Measurement(
            float("nan"), wall, f"exit code {proc.returncode}, no summary ({_tail(folder / f'{name}.log')})"
        )
    rate = float(summary.get("env_frames_per_sec", float("nan")))
    if summary.get("status") not in ("done", "interrupted"):
        return Measurement(
            float("nan"),
            wall,
            f"{summary.get('status')}: {summary.get('error') or _tail(folder / f'{name}.log')}",
        )
    if rate != rate:
        return Measurement(rate, wall, "too short for a rate")
    return Measurement(rate, wall)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the run's process group (the run stops and closes its workers), SIGKILL after 20 s."""
    for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(log: Path) -> str:
    """The last non-empty line of a log (the error a failed run printed)."""
    try:
        lines = [s for s in log.read_text(errors="replace").splitlines() if s.strip()]
    except OSError:
        return "no log"
    return lines[-1][-300:] if lines else "empty log"
