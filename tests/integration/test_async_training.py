"""Async placement: trains, resumes, and stops cleanly (SIGINT, SIGKILL, a crashing worker):
no child process and no shared-memory file of the run remain, and the last checkpoint loads."""

import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from shm_leftovers import shm_entries, shm_left_since

from surge.app.resolve import parse_cfg
from surge.app.training_run import train

ROOT = Path(__file__).resolve().parents[2]
# The lag of a sample is bounded by the iterations its block can wait: the two the learner may hold
# (num_batches_to_accumulate=2), plus one because a block's first step can be acted an iteration
# before its last, when its worker is descheduled mid-block. Two tests running at once (pytest-xdist,
# 2026-11-29) saw 120 versions, 3 iterations, in a run's first second; unreloaded weights give lags
# of every version the learner made (over 2000 here).
IN_FLIGHT_ITERATIONS = 3

FAST = [
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--decorrelate_experience_max_seconds=0",
    "--seed=0",
    "--set_workers_cpu_affinity=False",
]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _child_pids(log: str) -> list[int]:
    return [int(p) for p in re.findall(r"Started process \S+ \(pid (\d+)\)", log)]


def _wait_dead(pids, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


MODES = {
    "appo": [],
    "sync_foreground": ["--num_minibatches_to_accumulate=0", "--train_in_background_thread=False"],
    "two_inference_workers_one_split": ["--policy_workers_per_policy=2", "--worker_num_splits=1"],
    "inference_in_rollout_workers": ["--policy_workers_per_policy=0"],
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.slow
def test_async_cartpole_trains_and_resumes(tmp_path, mode):
    args = ["--env=cartpole", "--experiment=a", f"--train_dir={tmp_path}", *FAST, *MODES[mode]]
    assert train(parse_cfg([*args, "--train_for_env_steps=4000"])) == "done"
    ckpts = sorted((tmp_path / "a" / "checkpoint_p0").glob("checkpoint_*.pth"))
    state = torch.load(ckpts[-1], weights_only=True)
    assert state["env_frames"] >= 4000 and state["learner"]["policy_version"] > 0
    (tmp_path / "a" / "done").unlink()
    assert train(parse_cfg([*args, "--train_for_env_steps=8000"])) == "done"
    resumed = torch.load(
        sorted((tmp_path / "a" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1], weights_only=True
    )
    assert resumed["env_frames"] >= 8000
    assert resumed["learner"]["policy_version"] > state["learner"]["policy_version"]


def _start(tmp_path, name, *extra):
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        "--env=cartpole",
        f"--experiment={name}",
        f"--train_dir={tmp_path}",
        "--train_for_env_steps=1000000000",
        *FAST,
        *extra,
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)


def _wait_for_log(path: Path, text: str, timeout=120.0) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and text in (content := path.read_text()):
            return content
        time.sleep(0.3)
    raise AssertionError(f"{text!r} not in {path}")


@pytest.mark.slow
def test_sigint_stops_every_child_saves_and_leaves_no_shared_memory(tmp_path):
    shm_before = shm_entries()
    proc = _start(tmp_path, "int")
    log = tmp_path / "int" / "surge_log.txt"
    _wait_for_log(log, "Env frames/s")
    deadline = time.time() + 60  # a first report can come before any frame is counted
    while time.time() < deadline and not re.search(r"Total env frames: [1-9]", log.read_text()):
        time.sleep(0.3)
    content = log.read_text()
    pids = _child_pids(content)
    assert len(pids) == 4  # learner, inference, 2 rollout workers
    own = re.search(r"Learner 0 \(pid (\d+)\) on cpu", content)  # a child's line in the run's log
    assert own and int(own.group(1)) in pids, content[-2000:]
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 130, out  # 128 + SIGINT: stopped on request (docs/reliability.md)
    assert _wait_dead(pids, timeout=5) == []
    ckpt = sorted((tmp_path / "int" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    assert torch.load(ckpt, weights_only=True)["env_frames"] > 0
    # entries of a test beside this one (pytest-xdist: its semaphores, torch's shared tensors) are
    # held by a live process or go soon; the run's own leftovers stay
    assert shm_left_since(shm_before) == set()


@pytest.mark.slow
def test_sigkill_of_the_main_process_takes_the_children_with_it(tmp_path):
    shm_before = shm_entries()
    proc = _start(tmp_path, "kill", "--save_every_sec=1")
    log = tmp_path / "kill" / "surge_log.txt"
    content = _wait_for_log(log, "Saved ")
    pids = _child_pids(content)
    proc.kill()
    proc.communicate(timeout=30)
    assert _wait_dead(pids) == []
    ckpt = sorted((tmp_path / "kill" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    assert torch.load(ckpt, weights_only=True)["learner"]["policy_version"] >= 0
    # entries of a test beside this one (pytest-xdist: its semaphores, torch's shared tensors) are
    # held by a live process or go soon; the run's own leftovers stay
    assert shm_left_since(shm_before) == set()


@pytest.mark.slow
def test_a_crashing_env_is_reported_with_its_traceback_and_the_run_stops(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(
        "import sys\n"
        "import gymnasium as gym\n"
        "from surge.envs.registry import register_env\n"
        "class Boom(gym.Wrapper):\n"
        "    n = 0\n"
        "    def step(self, a):\n"
        "        Boom.n += 1\n"
        "        if Boom.n > 300:\n"
        "            raise ValueError('env exploded on purpose')\n"
        "        return self.env.step(a)\n"
        "register_env('boom', lambda name, cfg, render_mode=None: Boom(gym.make('CartPole-v1')))\n"
        "if __name__ == '__main__':\n"
        "    from surge.train import main\n"
        "    sys.exit(main(sys.argv[1:]))\n"
    )
    cmd = [
        sys.executable,
        str(script),
        "--env=boom",
        "--experiment=boom",
        f"--train_dir={tmp_path}",
        "--train_for_env_steps=100000000",
        "--use_rnn=False",
        "--recurrence=1",
        "--with_vtrace=False",
        "--max_worker_restarts_per_hour=0",  # a worker that dies is not replaced: the run stops
        *FAST,
    ]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 1
    log = (tmp_path / "boom" / "surge_log.txt").read_text()
    assert "env exploded on purpose" in log and "Traceback" in log
    assert "raised 3 time(s) in a row after being rebuilt" in log  # rebuilt twice first
    assert "--max_worker_restarts_per_hour=0" in log
    assert _wait_dead(_child_pids(log)) == []


@pytest.mark.slow
def test_collection_pauses_while_the_learner_is_behind(tmp_path):
    """A learner-bound run (10 epochs per batch, fast env): the learner holds a batch's blocks until
    it has trained on it, so collection waits instead of queueing stale experience and the policy
    lag stays within the two accumulated iterations plus the one a block can span (4-5 iterations
    when blocks were freed on copy)."""
    args = ["--env=cartpole", "--experiment=lag", f"--train_dir={tmp_path}", *FAST]
    args += ["--ppo_epochs=10", "--report_interval_sec=1", "--train_for_env_steps=30000"]
    assert train(parse_cfg(args)) == "done"
    log = (tmp_path / "lag" / "surge_log.txt").read_text()
    lags = [int(m) for m in re.findall(r"Policy lag \(min/avg/max\): \S+/\S+/(\d+)", log)]
    assert lags, log[-2000:]
    versions_per_iteration = 10 * 4  # SGD steps: ppo_epochs x cartpole's num_batches_per_iteration
    assert max(lags) <= IN_FLIGHT_ITERATIONS * versions_per_iteration, lags


@pytest.mark.parametrize("policies", [1, 2])
@pytest.mark.slow
def test_rollout_workers_acting_themselves_use_each_policys_latest_weights(tmp_path, policies):
    """--policy_workers_per_policy=0: no inference process starts; the rollout workers act with their
    own copy of each policy and reload it whenever its learner publishes, so the lag of the samples
    stays within two iterations per policy, as in the test above. A copy never reloaded would give lags
    of every version the learner made (hundreds here)."""
    args = ["--env=cartpole", "--experiment=here", f"--train_dir={tmp_path}", *FAST]
    args += ["--policy_workers_per_policy=0", f"--num_policies={policies}", "--ppo_epochs=10"]
    args += ["--report_interval_sec=1", "--train_for_env_steps=30000"]
    assert train(parse_cfg(args)) == "done"
    log = (tmp_path / "here" / "surge_log.txt").read_text()
    started = re.findall(r"Started process (\S+) \(pid", log)
    assert started and not [n for n in started if n.startswith("inference")], started
    assert "inference in the rollout workers" in log
    lags = [int(m) for m in re.findall(r"Policy lag \(min/avg/max\): \S+/\S+/(\d+)", log)]
    assert lags, log[-2000:]
    # IN_FLIGHT_ITERATIONS of ppo_epochs x 4 batches per policy (with two policies a block waits for
    # both learners: their inference workers' runs showed lags up to 120 versions), plus one more
    # iteration: here a worker also acts, so a worker descheduled mid-block holds its block's first
    # steps longer while the other worker feeds the learner (CI on 2 loaded cores saw 160 versions,
    # 4 iterations, with one policy, 2026-12-01). Never-reloaded weights lag by every version made.
    bound = policies * (IN_FLIGHT_ITERATIONS + 1) * 10 * 4
    versions = []
    for p in range(policies):
        ckpt = sorted((tmp_path / "here" / f"checkpoint_p{p}").glob("checkpoint_*.pth"))[-1]
        versions.append(torch.load(ckpt, weights_only=True)["learner"]["policy_version"])
    assert min(versions) > 2 * bound, (versions, bound)  # the bound tells reloaded from stale weights
    # The reports' median is the steady lag. One report may catch a worker descheduled for longer
    # (the README's test command on 2 loaded cores, 2026-12-05: one report of 240 versions among
    # 40-80; 8 runs two at a time: at most 80): the largest is held to a quarter of the versions
    # made, which weights never reloaded reach by the end of the run.
    assert statistics.median(lags) <= bound, lags
    assert max(lags) <= min(versions) / 4, (lags, versions)


_FIRST_RESET_FAILS = """
import os, sys, time
import gymnasium as gym
from surge.envs.registry import register_env

MARKER, HOW = os.environ["FLAKY_MARKER"], os.environ["FLAKY_HOW"]  # spawned children see them too


class FirstResetFails(gym.Wrapper):
    def reset(self, **kwargs):
        try:  # only the first env reset of the run, in whichever worker gets there first
            fd = os.open(MARKER, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return self.env.reset(**kwargs)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        if HOW == "hang":
            time.sleep(3600)
        raise RuntimeError("reset failed on purpose")


register_env("flaky", lambda name, cfg, render_mode=None: FirstResetFails(gym.make("CartPole-v1")))
if __name__ == "__main__":
    from surge.train import main
    sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("how", ["hang", "crash"])
@pytest.mark.slow
def test_a_worker_stuck_or_crashed_in_its_first_reset_is_replaced(tmp_path, how):
    script = tmp_path / "flaky.py"
    script.write_text(_FIRST_RESET_FAILS)
    marker = tmp_path / "first_reset_pid"
    cmd = [sys.executable, str(script), "--env=flaky", "--experiment=flaky"]
    cmd += [f"--train_dir={tmp_path}", "--train_for_env_steps=3000", "--reset_timeout_seconds=20"]
    cmd += ["--use_rnn=False", "--recurrence=1", "--with_vtrace=False", *FAST]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLAKY_MARKER": str(marker), "FLAKY_HOW": how}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env)
    log = (tmp_path / "flaky" / "surge_log.txt").read_text()
    assert proc.returncode == 0, log[-3000:]
    word = "stuck" if how == "hang" else "dead"
    assert re.search(rf"Rollout worker \d is {word} in its first reset: replacing it", log), log[-3000:]
    assert not _alive(int(marker.read_text()))  # the stuck process was killed, not left behind
    assert _wait_dead(_child_pids(log)) == []
    assert (tmp_path / "flaky" / "done").exists()
