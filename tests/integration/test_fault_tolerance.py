"""Async placement under faults: rollout and inference workers killed with SIGKILL mid-run are
replaced and the run finishes its budget; a learner killed mid-run still leaves a final checkpoint
(the weights it last published) that the same command resumes, and so does a hung one; the restart budget stops a run
whose workers keep dying; no process of the run is left behind."""

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from proc_tree import descendants

ROOT = Path(__file__).resolve().parents[2]
SMALL = [
    "--env=CartPole-v1",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "32",
    "--use_rnn=False",
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
    "--seed=0",
]


def _start(tmp_path: Path, name: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        f"--experiment={name}",
        f"--train_dir={tmp_path}",
        *SMALL,
        *extra,
    ]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env
    )


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    """Living descendants of `pid` (surge's children are the fork server's: `proc_tree`)."""
    return descendants(pid)


def _role(proc: subprocess.Popen, prefix: str, timeout: float = 60.0) -> list[int]:
    """The run's children titled `surge:{prefix}...` (waits until one has its title)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = [p for p in _children(proc.pid) if _title(p).startswith(f"surge:{prefix}")]
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no process surge:{prefix}* under the run")


def _text(log: Path) -> str:
    return log.read_text() if log.exists() else ""


def _frames(log: Path) -> int:
    found = re.findall(r"Total env frames: (\d+)", log.read_text()) if log.exists() else []
    return int(found[-1]) if found else 0


def _wait_frames(log: Path, proc: subprocess.Popen, above: int, timeout: float = 120.0) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if (f := _frames(log)) > above:
            return f
        time.sleep(0.2)
    raise AssertionError(f"the run made no progress past {above} env frames:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
def test_killed_rollout_and_inference_workers_are_replaced_and_the_run_finishes(tmp_path):
    proc = _start(tmp_path, "kills", "--train_for_env_steps=1000000000", "--report_interval_sec=1")
    log = tmp_path / "kills" / "surge_log.txt"
    frames = _wait_frames(log, proc, 0)
    rng = random.Random(0)
    for role in ["rollout", "inference", "rollout", "inference", "rollout", "inference"]:
        os.kill(rng.choice(_role(proc, role)), signal.SIGKILL)
        time.sleep(rng.uniform(0.2, 1.0))
    frames = _wait_frames(log, proc, frames + 5000)  # training goes on after the last kill
    children = [p for p in _children(proc.pid) if _title(p).startswith("surge:")]
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out[-3000:]  # 128 + SIGINT: stopped on request
    text = log.read_text()
    assert len(re.findall(r"Process rollout_\d exited with code -9: replacing it", text)) == 3
    assert len(re.findall(r"Process inference_p0_0 exited with code -9: replacing it", text)) == 3
    assert "Worker processes replaced after a crash or hang so far: 6" in text
    deadline = time.time() + 10
    while time.time() < deadline and any(Path(f"/proc/{p}").exists() for p in children):
        time.sleep(0.2)
    assert not [p for p in children if Path(f"/proc/{p}").exists()]
    state = torch.load(
        sorted((tmp_path / "kills" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1], weights_only=True
    )
    assert state["env_frames"] >= frames


@pytest.mark.slow
def test_a_killed_learner_leaves_a_final_checkpoint_of_its_published_weights(tmp_path):
    # no regular checkpoint during the run: everything would be lost with the learner
    args = ["--train_for_env_steps=1000000000", "--save_every_sec=100000", "--report_interval_sec=1"]
    proc = _start(tmp_path, "learner", *args)
    log = tmp_path / "learner" / "surge_log.txt"
    frames = _wait_frames(log, proc, 3000)
    os.kill(_role(proc, "learner")[0], signal.SIGKILL)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out[-3000:]
    text = log.read_text()
    m = re.search(
        r"Learner 0 died: wrote the final checkpoint (\S+) from the weights it last published "
        r"\(policy version (\d+), env frame (\d+)\)",
        text,
    )
    assert m, text[-3000:]
    state = torch.load(m.group(1), weights_only=True)
    assert state["learner"]["policy_version"] == int(m.group(2)) > 0
    assert state["env_frames"] == int(m.group(3)) >= frames
    # the same command resumes from it
    proc = _start(tmp_path, "learner", *args)
    resumed = re.compile(r"Resumed from env frame (\d+)")
    deadline = time.time() + 120
    while time.time() < deadline and not resumed.search(log.read_text()):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert int(resumed.search(log.read_text()).group(1)) == int(m.group(3))


@pytest.mark.slow
def test_a_hung_learner_is_killed_and_leaves_a_final_checkpoint(tmp_path):
    """SIGSTOP: the learner is alive but silent, whether it was training or waiting."""
    args = ["--train_for_env_steps=1000000000", "--save_every_sec=100000", "--report_interval_sec=1"]
    proc = _start(tmp_path, "hung", *args, "--heartbeat_timeout_sec=5")
    log = tmp_path / "hung" / "surge_log.txt"
    _wait_frames(log, proc, 3000)
    learner = _role(proc, "learner")[0]
    os.kill(learner, signal.SIGSTOP)
    stopped = time.monotonic()
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out[-3000:]
    assert time.monotonic() - stopped >= 5  # not before the timeout
    text = log.read_text()
    assert re.search(r"process learner_p0 hung: no optimizer step.* for \d+ s", text), text[-3000:]
    m = re.search(r"Learner 0 died: wrote the final checkpoint (\S+)", text)
    assert m, text[-3000:]
    assert torch.load(m.group(1), weights_only=True)["learner"]["policy_version"] > 0
    with pytest.raises(ProcessLookupError):
        os.kill(learner, 0)


@pytest.mark.slow
def test_a_hung_rollout_worker_writes_its_stack_to_the_log_and_is_replaced(tmp_path):
    """An env whose `step` stops answering (tests/hanging_env.py): the worker's Python stack, which
    names the hanging function, is in the run's log before the worker is killed and replaced."""
    marker = tmp_path / "hang_once"
    marker.touch()
    args = ["--env=tests.hanging_env:HangingCartPole-v0", "--heartbeat_timeout_sec=5"]
    args += ["--train_for_env_steps=1000000000", "--report_interval_sec=1"]
    proc = _start(tmp_path, "stack", *args, env={**os.environ, "SURGE_TEST_HANG_ONCE": str(marker)})
    log = tmp_path / "stack" / "surge_log.txt"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and "replacing it" not in _text(log):
        time.sleep(0.2)
    assert not marker.exists()  # an env hung
    _wait_frames(log, proc, _frames(log) + 2000)  # the replacement works
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out[-3000:]  # 128 + SIGINT: stopped on request
    text = log.read_text()
    assert re.search(r"Process rollout_\d hung: no heartbeat for \d+ s", text), text[-3000:]
    stack = text[text.index("replacing it") :]  # written when it was found hung
    assert re.search(r'File ".*hanging_env\.py", line \d+ in _hang_here', stack), text[-5000:]


@pytest.mark.slow
def test_the_restart_budget_stops_a_run_whose_workers_keep_dying(tmp_path):
    proc = _start(tmp_path, "budget", "--train_for_env_steps=1000000000", "--max_worker_restarts_per_hour=1")
    log = tmp_path / "budget" / "surge_log.txt"
    _wait_frames(log, proc, 0)
    os.kill(_role(proc, "rollout")[0], signal.SIGKILL)  # replaced: the budget allows one
    time.sleep(1.0)
    _wait_frames(log, proc, _frames(log))
    time.sleep(2.0)
    os.kill(_role(proc, "rollout")[0], signal.SIGKILL)  # one too many
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out[-3000:]
    text = log.read_text()
    assert "--max_worker_restarts_per_hour=1" in text and "stopping" in text
    assert sorted((tmp_path / "budget" / "checkpoint_p0").glob("checkpoint_*.pth"))  # the learner saved


@pytest.mark.slow
def test_a_main_process_killed_at_random_moments_always_resumes_from_a_valid_checkpoint(tmp_path):
    """SIGKILL of the main process (serial: it writes the checkpoints itself) 3 times at random
    moments with a 1-second save interval: each restart resumes from a checkpoint that loads, the
    frame counter never goes back, and unfinished writes are cleaned up."""
    args = [
        "--serial_mode=True",
        "--save_every_sec=1",
        "--report_interval_sec=1",
        "--train_for_env_steps=1000000000",
    ]
    log = tmp_path / "main" / "surge_log.txt"
    rng = random.Random(0)
    resumed: list[int] = []
    for i in range(4):
        start = len(log.read_text()) if log.exists() else 0
        proc = _start(tmp_path, "main", *args)
        deadline = time.time() + 120
        # the first run lives until its first checkpoint, so every restart has one to resume
        pattern = r"Saved " if i == 0 else r"Total env frames: [1-9]"
        while time.time() < deadline and not re.search(
            pattern, log.read_text()[start:] if log.exists() else ""
        ):
            time.sleep(0.1)
        text = log.read_text()[start:]
        if i > 0:
            m = re.search(r"Resumed from env frame (\d+)", text)
            assert m, text[-2000:]
            resumed.append(int(m.group(1)))
            assert "is damaged" not in text and "Could not read checkpoint" not in text
        if i == 3:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=120)
            break
        time.sleep(rng.uniform(0.0, 2.0))
        proc.kill()
        proc.communicate(timeout=30)
    assert resumed == sorted(resumed) and resumed[-1] > 0, resumed
    assert not list((tmp_path / "main" / "checkpoint_p0").glob(".tmp_*"))
