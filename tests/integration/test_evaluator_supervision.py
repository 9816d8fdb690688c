"""The evaluator process is supervised as a worker (issue 59; the soak found both gaps): one that
hangs (SIGSTOP: no sign of life for `--heartbeat_timeout_sec`) or dies (SIGKILL) is replaced, the
run goes on training, the replacement evaluates again, and it keeps the best eval return on disk
(`--save_best_by_eval`: a replacement that started from scratch would write a worse "best").
Before, a stopped evaluator was never noticed and a killed one ended the run."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
import torch
from test_train_eval_runs import COMMON, _alive, _start_run, eval_scalars

EVERY = 2000


def _wait_log(folder: Path, pattern: str, proc, timeout: float, after: int = 0) -> re.Match:
    """The first match of `pattern` in the run's log from character `after` on, within `timeout` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        log = folder / "surge_log.txt"
        if log.exists():
            m = re.compile(pattern).search(log.read_text(), after)
            if m:
                return m
        time.sleep(0.5)
    raise AssertionError(f"no {pattern!r} in the run's log within {timeout:.0f} s")


def _evaluator_pid(m: re.Match) -> int:
    return int(m.group(1))


def _raise_the_best(folder: Path) -> Path:
    """Rewrites the best checkpoint's eval return as one no evaluation reaches (atomically)."""
    (path,) = (folder / "checkpoint_p0").glob("best_*.pth")
    state = torch.load(path, weights_only=True)
    state["eval_return"] = UNBEATABLE
    torch.save(state, path.with_suffix(".tmp"))
    path.with_suffix(".tmp").replace(path)
    return path


UNBEATABLE = 1e9


@pytest.mark.slow
def test_a_stopped_then_a_killed_evaluator_is_replaced_and_evaluates_again(tmp_path):
    args = [*COMMON, f"--eval_every_env_frames={EVERY}", "--heartbeat_timeout_sec=5"]
    proc = _start_run(args, tmp_path, "sup", 1_000_000_000)
    folder = tmp_path / "sup"
    started = r"Started process evaluator \(pid (\d+)\)"
    pids = []
    try:
        first = _wait_log(folder, started, proc, 120)
        pids.append(_evaluator_pid(first))
        evaluated = _wait_log(folder, r"Eval policy 0 at env frame", proc, 180, first.end())
        os.kill(pids[0], signal.SIGSTOP)
        hung = _wait_log(folder, r"Process evaluator hung: no heartbeat for \d+ s", proc, 60, evaluated.end())
        second = _wait_log(folder, started, proc, 30, hung.end())
        pids.append(_evaluator_pid(second))
        assert pids[1] != pids[0]
        evaluated = _wait_log(folder, r"Eval policy 0 at env frame", proc, 180, second.end())
        os.kill(pids[1], signal.SIGSTOP)  # so that it writes no best while the file is changed
        best = _raise_the_best(folder)
        os.kill(pids[1], signal.SIGKILL)
        died = _wait_log(
            folder, r"Process evaluator exited with code -9: replacing it", proc, 30, evaluated.end()
        )
        third = _wait_log(folder, started, proc, 30, died.end())
        pids.append(_evaluator_pid(third))
        _wait_log(folder, r"Eval policy 0 at env frame", proc, 180, third.end())
        assert proc.poll() is None  # the run trained on throughout
        # the third evaluator read the best return on disk: none of its evaluations beat it
        assert "new best" not in (folder / "surge_log.txt").read_text()[third.end() :]
        assert list((folder / "checkpoint_p0").glob("best_*.pth")) == [best]
    finally:
        for pid in pids[:1]:  # a stopped process that was not replaced must not outlive the test
            if _alive(pid):
                os.kill(pid, signal.SIGCONT)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 130, out[-3000:]
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)
    means = eval_scalars(folder, "eval/return_mean")
    steps = [s for s, _ in means]
    assert len(means) >= 3 and steps == sorted(steps)
