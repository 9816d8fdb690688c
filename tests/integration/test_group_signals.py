"""An async run stopped by SIGTERM to its whole process group stops as cleanly as by Ctrl+C, and a
killed fork server costs no more than a killed worker (issue 55, item 2).

GNU `timeout`, Slurm's time limit and systemd signal the whole group. multiprocessing's fork server
did not ignore SIGTERM, died of it and took every child it had forked with it: the log said
`process learner_p0 exited with code 255`, the final checkpoint held "the optimizer state of a
fresh optimizer" and the run exited 1. `timeout` signals the main process twice (the child, then
the group), and the second signal counted as an abort: a KeyboardInterrupt traceback and no final
checkpoint. The final checkpoint is checked for the learner's real optimizer state: Adam's step
count equals the policy_version (one optimizer step per version), which neither a fresh optimizer
(no state) nor an earlier checkpoint's (fewer steps) has.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from proc_tree import cmdline, descendants

ROOT = Path(__file__).resolve().parents[2]
#: `surge train`'s exit status when SIGTERM stopped it (docs/reliability.md, "Stopping")
EXIT_SIGTERM = 143
#: env frames after which the learner has trained (policy_version > 0): more than the run's 40
#: trajectory slots hold (2 workers x 4 envs), so slots were trained on and given back
TRAINED_FRAMES = 10_000
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc: Linux"
)


def _train_cmd(tmp_path: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "surge.cli",
        "train",
        "--env=CartPole-v1",
        "--experiment=e",
        f"--train_dir={tmp_path}",
        "--encoder_mlp_layers",
        "32",
        "--use_rnn=False",
        "--num_workers=2",
        "--num_envs_per_worker=4",
        "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
        *extra,
    ]


def _start(cmd: list[str], out: Path) -> subprocess.Popen:
    """`cmd` in a session and process group of its own (`setsid`), its output in `out`."""
    with out.open("wb") as f:
        return subprocess.Popen(
            cmd,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=f,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _frames(log: Path) -> int:
    """The total env frames of the run's last progress line (0 before the first)."""
    found = re.findall(r"Total env frames: (\d+)", log.read_text()) if log.exists() else []
    return int(found[-1]) if found else 0


def _wait_for_frames(proc: subprocess.Popen, log: Path, frames: int, out: Path, timeout: float = 180) -> int:
    """Waits until the run reported at least `frames` env frames (the learner has been training)."""
    deadline = time.time() + timeout
    while (got := _frames(log)) < frames:
        assert proc.poll() is None, f"the run ended early:\n{out.read_text()[-3000:]}"
        assert time.time() < deadline, f"{got} env frames after {timeout} s:\n{out.read_text()[-3000:]}"
        time.sleep(0.2)
    return got


def _finish(proc: subprocess.Popen, timeout: float = 120) -> int:
    try:
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _check_clean_stop(tmp_path: Path, out: Path) -> None:
    """No traceback, "Stopped on request", and a final checkpoint written by the learner itself."""
    text, log = out.read_text(), (tmp_path / "e" / "surge_log.txt").read_text()
    assert "Traceback" not in text + log, text[-3000:]
    assert "Stopped on request" in log, log[-3000:]
    assert "died" not in log and "exited with code" not in log, log[-3000:]
    _check_learner_saved(tmp_path)


def _check_learner_saved(tmp_path: Path) -> None:
    """The final checkpoint holds the learner's own optimizer state (module docstring)."""
    final = max((tmp_path / "e" / "checkpoint_p0").glob("checkpoint_*.pth"), key=lambda p: p.stat().st_mtime)
    learner = torch.load(final, map_location="cpu", weights_only=True)["learner"]
    assert "optimizers" in learner, f"{final.name}: no optimizer state (a fresh optimizer's)"
    steps = {int(s["step"]) for s in learner["optimizers"]["model"]["state"].values()}
    assert steps == {learner["policy_version"]} and learner["policy_version"] > 0, (
        final.name,
        steps,
        learner["policy_version"],
    )


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("gaps", [[], [0.0], [0.5]], ids=["once", "twice_at_once", "twice_0.5s_apart"])
def test_sigterm_to_the_process_group_stops_cleanly(tmp_path, gaps):
    """`kill -TERM -- -PGID` of a run started with `setsid`: once, or again `gap` s later. Two
    signals at once often reach Python's handler as one; 0.5 s apart the handler surely runs twice
    (before the fix the second one aborted the run with a KeyboardInterrupt traceback)."""
    out = tmp_path / "out.txt"
    proc = _start(_train_cmd(tmp_path, "--train_for_env_steps=100000000"), out)
    try:
        _wait_for_frames(proc, tmp_path / "e" / "surge_log.txt", TRAINED_FRAMES, out)
        os.killpg(proc.pid, signal.SIGTERM)
        for gap in gaps:
            time.sleep(gap)
            os.killpg(proc.pid, signal.SIGTERM)
    finally:
        rc = _finish(proc)
    assert rc == EXIT_SIGTERM, out.read_text()[-3000:]
    _check_clean_stop(tmp_path, out)


@pytest.mark.slow
@linux_only
def test_a_run_under_timeout_stops_cleanly_when_its_time_is_up(tmp_path):
    """`timeout -s TERM` sends SIGTERM to the run's main process, then to the whole group. The
    limit here is an hour; the test sends `timeout` the SIGALRM its timer would (the same code
    path in coreutils) once the learner trains, so the moment does not depend on the machine's
    speed. With `--preserve-status`, timeout exits with surge's status."""
    out = tmp_path / "out.txt"
    cmd = ["timeout", "--preserve-status", "-s", "TERM", "3600", *_train_cmd(tmp_path)]
    proc = _start(cmd, out)
    try:
        _wait_for_frames(proc, tmp_path / "e" / "surge_log.txt", TRAINED_FRAMES, out)
        os.kill(proc.pid, signal.SIGALRM)
    finally:
        rc = _finish(proc)
    assert rc == EXIT_SIGTERM, out.read_text()[-3000:]
    _check_clean_stop(tmp_path, out)


def _fork_server(main_pid: int) -> int:
    servers = [p for p in descendants(main_pid) if "multiprocessing.forkserver" in cmdline(p)]
    assert len(servers) == 1, {p: cmdline(p) for p in descendants(main_pid)}
    return servers[0]


@pytest.mark.slow
@linux_only
def test_a_killed_fork_server_costs_its_workers_not_the_run(tmp_path):
    """kill -9 of the fork server alone: its rollout and inference workers die with it and are
    replaced (one restart), the learner trains on, and the run finishes its budget normally."""
    out, log = tmp_path / "out.txt", tmp_path / "e" / "surge_log.txt"
    budget = 150_000
    proc = _start(_train_cmd(tmp_path, f"--train_for_env_steps={budget}"), out)
    try:
        killed_at = _wait_for_frames(proc, log, TRAINED_FRAMES, out)
        assert killed_at < budget // 2, f"the run trained {killed_at} env frames before the kill"
        os.kill(_fork_server(proc.pid), signal.SIGKILL)
    finally:
        rc = _finish(proc, timeout=300)
    text = log.read_text()
    assert rc == 0, out.read_text()[-3000:]
    assert "Training finished" in text and (tmp_path / "e" / "done").exists(), text[-3000:]
    assert not re.search(r"process learner_p0 (exited|hung)|Learner 0 died", text), text[-3000:]
    _check_learner_saved(tmp_path)
    assert re.search(r"The fork server \(pid \d+\) died", text), text[-3000:]
    replaced = re.findall(r"Process (rollout_\d|inference_p0_\d) died with the fork server", text)
    assert sorted(replaced) == ["inference_p0_0", "rollout_0", "rollout_1"], text[-3000:]
    # one restart for the three: the count in the last "replacing it (N replaced ...)" line
    assert re.findall(r"replacing it \((\d+) replaced in the last hour\)", text)[-1] == "1", text[-3000:]


@pytest.mark.slow
@linux_only
def test_a_second_signal_seconds_after_the_first_aborts_at_once(tmp_path):
    """The deliberate abort: a stop that cannot finish (the learner is stopped with SIGSTOP, so the
    main process waits for its final checkpoint) and Ctrl+C 2.5 s after the SIGTERM. The run
    exits at once with 128 + SIGINT, says it aborted, prints no traceback and leaves no process
    (before: the abort joined the stopped learner at exit, for ever)."""
    out, log = tmp_path / "out.txt", tmp_path / "e" / "surge_log.txt"
    proc = _start(_train_cmd(tmp_path, "--train_for_env_steps=100000000"), out)
    try:
        _wait_for_frames(proc, log, TRAINED_FRAMES, out)
        learner = int(re.search(r"Learner 0 \(pid (\d+)\)", log.read_text()).group(1))
        os.kill(learner, signal.SIGSTOP)
        os.kill(proc.pid, signal.SIGTERM)
        time.sleep(2.5)
        os.kill(proc.pid, signal.SIGINT)
        t0 = time.time()
        rc = _finish(proc, timeout=30)
        took = time.time() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = out.read_text()
    assert rc == 130, text[-3000:]
    assert took < 15, f"{took:.1f} s from the abort to the exit"
    assert "aborted by signal 2" in text and "Traceback" not in text, text[-3000:]
    assert "Stopped on request" not in log.read_text()
    time.sleep(1.0)  # the kernel's PR_SET_PDEATHSIG, if it were needed
    assert not descendants(proc.pid) and not Path(f"/proc/{learner}").exists()
