"""Each child of an async run runs at its role's niceness: the learner at `--default_niceness`,
rollout workers 10 above it (Sample Factory 2.1.1's offset: its rollout_worker.py calls
`psutil.Process().nice(default_niceness + 10)`), inference workers level with the rollout workers
(Sample Factory's are at + 2; surge's design, `surge.runtime.process_setup.NICENESS_OFFSET` says
why), the evaluator 15 above the learner; never above 19. Rollout workers that act themselves
(`--policy_workers_per_policy=0`) run at 19, and the evaluator level with them."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from proc_tree import cmdline, descendants

ROOT = Path(__file__).resolve().parents[2]
#: niceness above --default_niceness, by process: Sample Factory 2.1.1's for the learner and the
#: rollout workers (the reference), the rollout workers' for the inference workers
OFFSETS = {"learner": 0, "inference": 10, "rollout": 10}


def _children_by_title(pid: int) -> dict[str, int]:
    """Living descendants of `pid` named `surge:<title>` (setproctitle): title -> pid."""
    out = {}
    for d in descendants(pid):
        cmd = cmdline(d).split(" ")[0]
        if cmd.startswith("surge:"):
            out[cmd[len("surge:") :]] = d
    return out


def _niceness_of_children(
    tmp_path: Path, default_niceness: int, inference_workers: int = 1
) -> dict[str, int]:
    """Starts an async CartPole run with one rollout worker, `inference_workers` (0 or 1) inference
    workers and the evaluator; returns each child's niceness (by title) once all are up, then stops
    the run."""
    cmd = [
        sys.executable, "-m", "surge.train", "--env=CartPole-v1", "--serial_mode=False",
        "--num_workers=1", "--num_envs_per_worker=4", f"--policy_workers_per_policy={inference_workers}",
        "--eval_every_env_frames=100000000", "--device=cpu", f"--default_niceness={default_niceness}",
        "--train_for_seconds=120", f"--train_dir={tmp_path}", "--experiment=nice",
    ]  # fmt: skip
    log = tmp_path / "run.log"  # a file, not a pipe: a pipe nobody reads would fill and stall the run
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    wanted = {"learner_p0", "rollout_0", "evaluator"} | ({"inference_p0_0"} if inference_workers else set())
    try:
        deadline = time.monotonic() + 90
        nice: dict[str, int] = {}
        while time.monotonic() < deadline and proc.poll() is None:
            kids = _children_by_title(proc.pid)
            if wanted <= set(kids):
                time.sleep(2.0)  # each child sets its niceness in its set-up, after its title
                nice = {t: os.getpriority(os.PRIO_PROCESS, kids[t]) for t in wanted}
                break
            time.sleep(0.2)
        assert nice, f"the run's children did not all start: {log.read_text()[-2000:]}"
        return nice
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_children_run_at_their_roles_niceness(tmp_path):
    base = os.getpriority(os.PRIO_PROCESS, 0)
    if base + 1 + 15 > 19:
        pytest.skip(f"this process already runs at niceness {base}")
    nice = _niceness_of_children(tmp_path, default_niceness=1)
    assert nice["learner_p0"] == base + 1 + OFFSETS["learner"]
    assert nice["inference_p0_0"] == base + 1 + OFFSETS["inference"]
    assert nice["rollout_0"] == base + 1 + OFFSETS["rollout"]
    # the evaluator yields to everything that trains
    assert nice["evaluator"] == base + 1 + 15
    assert nice["evaluator"] > nice["rollout_0"] == nice["inference_p0_0"] > nice["learner_p0"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_rollout_workers_acting_themselves_run_at_the_lowest_priority(tmp_path):
    base = os.getpriority(os.PRIO_PROCESS, 0)
    if base + 1 >= 19:
        pytest.skip(f"this process already runs at niceness {base}")
    nice = _niceness_of_children(tmp_path, default_niceness=1, inference_workers=0)
    assert nice["learner_p0"] == base + 1
    assert nice["rollout_0"] == 19  # Linux's lowest priority, whatever the learner's
    assert nice["evaluator"] == 19  # level with them: niceness goes no higher
