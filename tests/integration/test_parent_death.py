"""Children of an async run die with a main process killed by SIGKILL, even on a loaded machine and
even while they are still starting (issue 24, item 6): a spawned child used to set
`PR_SET_PDEATHSIG` only after importing torch and unpickling its context, seconds of CPU time, and
at load 8 four of five children outlived the main process by more than 5 s."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from proc_tree import cmdline, descendants, stat
from shm_leftovers import shm_entries, shm_left_since

ROOT = Path(__file__).resolve().parents[2]
LOAD = 8  # busy processes on top of whatever else runs on the machine
#: the promise (docs/reliability.md): every child is gone within 2 s of its parent's death
DIE_WITHIN_SEC = 2.0


def _children(pid: int) -> dict[tuple[int, str], str]:
    """Living descendants of `pid`: (pid, start time) -> command line (the start time tells a
    reused pid)."""
    out = {}
    for d in descendants(pid):
        if (st := stat(d)) and (cmd := cmdline(d)):
            out[(d, st[19])] = cmd
    return out


def _alive(key: tuple[int, str]) -> bool:
    st = stat(key[0])
    return st is not None and st[0] != "Z" and st[19] == key[1]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc: Linux")
@pytest.mark.parametrize(
    "entry", [["surge.cli", "train"], ["surge.train"]], ids=["surge train", "-m surge.train"]
)
def test_children_exit_within_two_seconds_of_a_killed_main_at_load_8(tmp_path, entry):
    """The main process is killed the moment its inference and rollout workers are spawned: the
    learner is running by then, the others are still starting (the case that used to be missed)."""
    shm_before = shm_entries()
    cmd = [
        sys.executable,
        "-m",
        *entry,  # each child re-imports the main module before it can set PR_SET_PDEATHSIG
        "--env=CartPole-v1",
        "--encoder_mlp_layers",
        "32",
        "--use_rnn=False",
        "--num_workers=2",
        "--num_envs_per_worker=4",
        "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
        "--train_for_env_steps=100000000",
        f"--train_dir={tmp_path}",
        "--experiment=killed",
    ]
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    err = tmp_path / "stderr.txt"
    with err.open("wb") as f:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=f)
    busy: list[subprocess.Popen] = []
    seen: dict[tuple[int, str], str] = {}
    try:
        # resource tracker + fork server + learner + inference worker + 2 rollout workers
        deadline = time.time() + 240
        while len(seen) < 6:
            assert proc.poll() is None, err.read_text()[-3000:]
            assert time.time() < deadline, f"the run spawned only {sorted(seen.values())}"
            seen.update(_children(proc.pid))
            time.sleep(0.01)
        busy = [subprocess.Popen([sys.executable, "-S", "-c", "while True: pass"]) for _ in range(LOAD)]
        time.sleep(0.3)  # the busy loops are running
        seen.update(_children(proc.pid))
        proc.kill()
        killed_at = time.monotonic()
        proc.wait()
        # a child that dies is seen by the next look at /proc: the error of `took` is at most the
        # longest time between two looks (the first one counted from the kill), which is
        # measured, because this process runs at the same load as the children
        left, last_look, look_gap = dict(seen), killed_at, 0.0
        while left and time.monotonic() - killed_at < 10.0:
            left = {k: c for k, c in left.items() if _alive(k)}
            now = time.monotonic()
            look_gap, last_look = max(look_gap, now - last_look), now
            if left:
                time.sleep(0.05)
        took = last_look - killed_at
        print(
            f"{len(seen) - len(left)} of {len(seen)} children gone {took:.2f} s after the kill "
            f"(looks at most {look_gap:.2f} s apart)"
        )
    finally:
        for b in busy:
            b.kill()
            b.wait()
        for key in seen:  # a child still alive after the test: by pid and start time, not a reused pid
            if _alive(key):
                os.kill(key[0], signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not left and took <= DIE_WITHIN_SEC + look_gap, (
        f"{len(left)} of {len(seen)} children alive {took:.1f} s after the main process was killed: "
        f"{sorted(left.values())}"
    )
    # the resource tracker (gone too, above) unlinks the run's semaphores; torch's tensors use file
    # descriptors: nothing of the run stays in /dev/shm (another program's entries are held or go)
    new_shm = shm_left_since(shm_before)
    assert not new_shm, f"/dev/shm entries left behind: {new_shm}"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and /dev/shm: Linux")
def test_a_run_killed_as_a_whole_leaves_nothing_in_dev_shm(tmp_path):
    """SIGKILL to the run's whole process group, multiprocessing's resource tracker included (as a
    Ray node's kill, or a job scheduler's, does): nothing is left in /dev/shm. A
    `multiprocessing.Event` as the stop flag left its 5 named semaphores (`sem.mp-*`) this way."""
    shm_before = shm_entries()
    cmd = [
        sys.executable, "-m", "surge.train", "--env=CartPole-v1", "--encoder_mlp_layers", "32",
        "--use_rnn=False", "--num_workers=2", "--num_envs_per_worker=4",
        "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
        "--train_for_env_steps=100000000", f"--train_dir={tmp_path}", "--experiment=killpg",
    ]  # fmt: skip
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = tmp_path / "killpg" / "surge_log.txt"
    proc = subprocess.Popen(cmd, cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, start_new_session=True)
    seen: dict[tuple[int, str], str] = {}
    try:
        deadline = time.time() + 240
        while not (log.exists() and "Env frames/s" in log.read_text()):
            assert proc.poll() is None and time.time() < deadline, "the run did not start training"
            seen.update(_children(proc.pid))
            time.sleep(0.2)
        seen.update(_children(proc.pid))
        assert any("resource_tracker" in c for c in seen.values()), sorted(seen.values())
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.time() + 10
        while any(_alive(k) for k in seen) and time.time() < deadline:
            time.sleep(0.05)
    finally:
        for key in seen:
            if _alive(key):
                os.kill(key[0], signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    new_shm = shm_left_since(shm_before)  # (a test beside this one may have just stopped its run)
    assert not new_shm, f"/dev/shm entries left behind: {sorted(new_shm)}"
