"""Fault tolerance, measured: prints the table of `docs/reliability.md`.

Scenarios (each a real `surge train` on CartPole-v1 in a subprocess; see `--help`):

- `rollout-kills`: SIGKILL a random rollout worker N times during one async run; every kill must
  be replaced and counted, and the run must train on (10k more env frames) and stop cleanly.
- `inference-kills`: the same for the inference worker.
- `env-faults`: the env raises on 1% of its steps (`surge.envs.fault_injection:FlakyStep`); the run
  must finish, each fault counted.
- `main-kills`: SIGKILL the main process at a random moment (a 2-second save interval, so some land
  during checkpoint writes) N times, restarting the same command each time; every restart must
  resume from a valid checkpoint with the frame counter continuing.

After each run: no process of the run left (process titles `surge:*` under this script) and no
`/dev/shm` entry that was not there before.

    python benchmarks/fault_tolerance.py --scenario all
    python benchmarks/fault_tolerance.py --scenario main-kills --kills 200
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMON = [
    "--env=CartPole-v1",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "64",
    "64",
    "--use_rnn=False",
    "--decorrelate_experience_max_seconds=0",
]


def _ours(workdir: Path) -> list[int]:
    """Pids of living processes of this script's runs: each run starts in `workdir`, and its
    children inherit that working directory (found even after they were re-parented to init;
    process titles overwrite the environment, so it cannot carry a marker)."""
    out, root = [], str(workdir.resolve())
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                cwd = os.readlink(f"/proc/{d}/cwd")
            except OSError:
                continue
            if cwd == root or cwd.startswith(root + "/"):
                out.append(int(d))
    return out


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


def _surge_processes(workdir: Path) -> list[int]:
    """Pids of this script's runs' surge child processes (titles `surge:...`)."""
    found = [p for p in _ours(workdir) if _title(p).startswith("surge:")]
    PIDS.update(found)
    return found


def _shm() -> set[str]:
    return set(os.listdir("/dev/shm"))


def _held_by_others(name: str, ours: set[int]) -> bool:
    """Whether a process not of this script maps /dev/shm/`name` (another program's entry)."""
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in ours:
            continue
        try:
            if f"/dev/shm/{name}" in Path(f"/proc/{d}/maps").read_text():
                return True
        except OSError:
            continue
    return False


def _train(train_dir: Path, extra: list[str], log: Path) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        f"--train_dir={train_dir}",
        "--experiment=ft",
        *COMMON,
        *extra,
    ]
    proc = subprocess.Popen(cmd, stdout=log.open("ab"), stderr=subprocess.STDOUT, cwd=log.parent)
    PIDS.add(proc.pid)
    return proc


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, timeout: float, offset: int = 0) -> bool:
    """Waits until `pattern` appears in `log` after byte `offset`; False if the run ended first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if re.search(pattern, log.read_text(errors="replace")[offset:]):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


#: pids of this script's runs and of their children seen alive (torch names its shared-memory files
#: torch_<pid>_..., so a leftover file is attributed to the process that made it)
PIDS: set[int] = set()


def _leftovers(shm_before: set[str], workdir: Path) -> tuple[int, int, int]:
    """`(processes, files, unattributed)`: processes of this script's runs still alive (by now
    every run has ended), /dev/shm files created since `shm_before` by them, and new files that
    no process holds and whose maker cannot be told (`sem.mp-*`: other programs on a shared
    machine make them too; a run of this script makes them only in the async placement)."""
    time.sleep(1.0)
    ours = set(_ours(workdir))
    files = unattributed = 0
    for name in _shm() - shm_before:
        if _held_by_others(name, ours):
            continue
        m = re.match(r"torch_(\d+)_", name)
        if m:
            files += int(m.group(1)) in PIDS
        else:
            unattributed += 1
    return len(ours), files, unattributed


def worker_kills(role: str, kills: int, workdir: Path, frames_after: int = 10_000) -> dict:
    """SIGKILLs a random process whose title starts with `surge:{role}` `kills` times, 0.5-1.5 s
    apart, during one async run; then waits until the run trained `frames_after` more env frames
    and stops it with SIGINT (a clean stop: exit code 130 and a final checkpoint)."""
    shm_before = _shm()
    log = workdir / f"{role}_kills.log"
    proc = _train(
        workdir / f"{role}_kills",
        [
            "--num_workers=2",
            "--train_for_env_steps=100000000",
            "--report_interval_sec=1",
            f"--max_worker_restarts_per_hour={kills + 10}",
        ],
        log,
    )
    done, frames_at_last_kill, frames_end = 0, 0, 0
    if _wait_for(log, r"Total env frames: [1-9]", proc, 180):
        deadline = time.time() + 30 * kills
        while done < kills and proc.poll() is None and time.time() < deadline:
            victims = [p for p in _surge_processes(workdir) if _title(p).startswith(f"surge:{role}")]
            if victims:
                os.kill(random.choice(victims), signal.SIGKILL)
                done += 1
                time.sleep(random.uniform(0.5, 1.5))
            else:  # its replacement is still starting (no title yet)
                time.sleep(0.1)
        frames_at_last_kill = _last_frames(log.read_text(errors="replace"))
        deadline = time.time() + 600
        while proc.poll() is None and time.time() < deadline:
            frames_end = _last_frames(log.read_text(errors="replace"))
            if frames_end >= frames_at_last_kill + frames_after:
                break
            time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    text = log.read_text(errors="replace")
    replaced = len(re.findall(r"Process \S+ .*: replacing it", text))
    discarded = sum(int(x) for x in re.findall(r"at most (\d+) agent steps", text))
    procs, shm, unattributed = _leftovers(shm_before, workdir)
    return {
        "scenario": f"{role} kills",
        "kills": done,
        "replaced": replaced,
        "stopped_cleanly": rc == 130 and "Stopped on request" in text,  # 128 + SIGINT
        "rc": rc,
        "frames_at_last_kill": frames_at_last_kill,
        "frames_after_last_kill": _last_frames(text) - frames_at_last_kill,
        "discarded_agent_steps_bound": discarded,
        "leftover_processes": procs,
        "leftover_shm": shm,
        "unattributed_new_sem_files": unattributed,
    }


def _last_frames(text: str) -> int:
    found = re.findall(r"Total env frames: (\d+)", text)
    return int(found[-1]) if found else 0


def env_faults(workdir: Path, frames: int = 100_000) -> dict:
    shm_before = _shm()
    log = workdir / "env_faults.log"
    proc = _train(
        workdir / "env_faults",
        [
            "--num_workers=2",
            f"--train_for_env_steps={frames}",
            "--env_wrappers",
            "surge.envs.fault_injection:FlakyStep",
        ],
        log,
    )
    try:
        rc = proc.wait(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    text = log.read_text(errors="replace")
    counted = re.findall(r"raised in env.step (\d+) time", text)
    procs, shm, unattributed = _leftovers(shm_before, workdir)
    return {
        "scenario": "env raising on 1% of steps",
        "faults": int(counted[-1]) if counted else 0,
        "frames": _last_frames(text),
        "finished": rc == 0 and "Training finished" in text,
        "rc": rc,
        "leftover_processes": procs,
        "leftover_shm": shm,
        "unattributed_new_sem_files": unattributed,
    }


def main_kills(kills: int, workdir: Path, serial: bool, large: bool = False) -> dict:
    """Kills the main process `kills` times at random moments, restarting the same command.
    `large`: a 3 x 2048 MLP (checkpoints of ~200 MB take most of a second to write, so many kills
    land inside a write)."""
    shm_before = _shm()
    name = ("main_kills_serial" if serial else "main_kills_async") + ("_large" if large else "")
    log = workdir / f"{name}.log"
    extra = [
        "--save_every_sec=2",
        "--report_interval_sec=1",
        "--train_for_env_steps=100000000",
        f"--serial_mode={serial}",
    ]
    if not serial:
        extra.append("--num_workers=2")
    if large:
        extra += ["--encoder_mlp_layers", "2048", "2048", "2048"]
    resumed, continuing, partial_writes, load_failures = 0, 0, 0, 0
    last_frames = -1
    for i in range(kills):
        start = log.stat().st_size if log.exists() else 0
        proc = _train(workdir / name, extra, log)
        # the first run lives until its first checkpoint, so every restart has one to resume
        if not _wait_for(log, r"Saved " if i == 0 else r"Total env frames: [1-9]", proc, 120, start):
            proc.kill()
            proc.wait()
            break
        time.sleep(random.uniform(0.0, 3.0))  # saves every 2 s: some kills land in a write
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        text = log.read_text(errors="replace")[start:]
        m = re.search(r"Resumed from env frame (\d+)", text)
        if i > 0 and m:
            resumed += 1
            frames = int(m.group(1))
            continuing += frames >= last_frames
            last_frames = frames
        elif i == 0:
            last_frames = 0
        partial_writes += len(re.findall(r"Removed (\d+) unfinished checkpoint", text))
        load_failures += len(re.findall(r"Could not load checkpoint", text))
        time.sleep(0.3)  # children die with the main process (PR_SET_PDEATHSIG)
    # the restart after the last kill: it must resume too; then a clean stop
    start = log.stat().st_size if log.exists() else 0
    proc = _train(workdir / name, extra, log)
    if _wait_for(log, r"Total env frames: [1-9]", proc, 120, start):
        m = re.search(r"Resumed from env frame (\d+)", log.read_text(errors="replace")[start:])
        if m:
            resumed += 1
            continuing += int(m.group(1)) >= last_frames
            last_frames = int(m.group(1))
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    procs, shm, unattributed = _leftovers(shm_before, workdir)
    return {
        "scenario": f"SIGKILL of the main process ({'serial' if serial else 'async'}"
        + (", ~200 MB checkpoints)" if large else ")"),
        "kills": kills,
        "restarts_resumed": resumed,
        "frame_counter_continued": continuing,
        "restarts_that_found_a_partial_write": partial_writes,
        "checkpoint_load_failures": load_failures,
        "last_resumed_frame": last_frames,
        "leftover_processes": procs,
        "leftover_shm": shm,
        "unattributed_new_sem_files": unattributed,
    }


def write_kills(kills: int, workdir: Path) -> dict:
    """SIGKILLs the main process (serial: it writes its checkpoints itself) the moment a checkpoint
    write is under way (its temporary file exists), `kills` times; each restart must resume from a
    complete checkpoint and remove the unfinished write. A 2 x 2048 MLP makes each write ~50 MB."""
    shm_before = _shm()
    log = workdir / "write_kills.log"
    extra = ["--serial_mode=True", "--save_every_sec=1", "--train_for_env_steps=100000000"]
    extra += ["--encoder_mlp_layers", "2048", "2048"]
    folder = workdir / "write_kills" / "ft" / "checkpoint_p0"
    hit = resumed = cleaned = load_failures = 0
    for i in range(kills + 1):
        start = log.stat().st_size if log.exists() else 0
        proc = _train(workdir / "write_kills", extra, log)
        deadline = time.time() + 180
        caught = False
        # the first run writes one complete checkpoint first, so every restart has one to resume;
        # the killed run's temporary file is still there until this run removes it: wait for a new one
        complete = i > 0
        stale = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
        while proc.poll() is None and time.time() < deadline:
            names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
            if not complete:
                complete = any(n.startswith("checkpoint_") for n in names)
            elif any(n.startswith(".tmp_") and n not in stale for n in names):
                if i < kills:
                    proc.send_signal(signal.SIGKILL)
                    caught = True
                break
            time.sleep(0.002)
        if i == kills:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=180)
        hit += caught
        text = log.read_text(errors="replace")[start:]
        if i > 0:
            resumed += bool(re.search(r"Resumed from env frame \d+", text))
            cleaned += bool(re.search(r"Removed \d+ unfinished checkpoint write", text))
        load_failures += len(re.findall(r"Could not load checkpoint", text))
    procs, shm, unattributed = _leftovers(shm_before, workdir)
    return {
        "scenario": "SIGKILL of the main process inside a checkpoint write (serial, ~50 MB checkpoints)",
        "kills_inside_a_write": hit,
        "restarts_resumed": resumed,
        "restarts_that_removed_the_unfinished_write": cleaned,
        "checkpoint_load_failures": load_failures,
        "leftover_processes": procs,
        "leftover_shm": shm,
        "unattributed_new_sem_files": unattributed,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--scenario",
        choices=(
            "all",
            "rollout-kills",
            "inference-kills",
            "env-faults",
            "main-kills",
            "main-kills-large",
            "write-kills",
            "main-kills-async",
        ),
        default="all",
    )
    ap.add_argument(
        "--kills", type=int, default=None, help="kills per scenario (default 50; 200 for main-kills)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs, experiments)")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="surge_ft_"))
    results = []
    todo = (
        ["rollout-kills", "inference-kills", "env-faults", "main-kills"]
        if args.scenario == "all"
        else [args.scenario]
    )
    for sc in todo:
        t0 = time.time()
        if sc == "rollout-kills":
            r = worker_kills("rollout", args.kills or 50, workdir)
        elif sc == "inference-kills":
            r = worker_kills("inference", args.kills or 50, workdir)
        elif sc == "env-faults":
            r = env_faults(workdir)
        elif sc == "write-kills":
            r = write_kills(args.kills or 20, workdir)
        elif sc == "main-kills-large":
            r = main_kills(args.kills or 30, workdir, serial=True, large=True)
        else:
            r = main_kills(args.kills or 200, workdir, serial=sc == "main-kills")
        r["seconds"] = round(time.time() - t0)
        results.append(r)
        print(r, flush=True)
    print(f"\nlogs in {workdir}" if args.keep else "")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
