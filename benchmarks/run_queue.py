"""Where each process of a surge training run spends its wall time: running, waiting in the run
queue for a core (runnable, preempted), or sleeping (waiting for work: a batch, a free block, a
reply), per process and, for the learner, per thread.

    python benchmarks/run_queue.py --config cartpole --mode async_acting_in_workers
    python benchmarks/run_queue.py --config cartpole --mode async_acting_in_workers -- --default_niceness=5

It starts `surge train` on the benchmark config in the placement MODE (`configs.py`), waits
`--warmup` seconds, reads `/proc/PID/task/TID/schedstat` (nanoseconds on a core and in the run
queue) of every process of the run, again `--seconds` later, then stops the run. Each figure is a
share of the window's wall time (1.0: the whole window), summed over a process's threads, so a
process with two busy threads can exceed 1. A stage whose run + run-queue share is near 1 with
little sleep is the one the rate waits on; run-queue time there is what a priority can give back.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _session_processes(sid: int) -> dict[int, str]:
    """pid -> title (`surge:<role>` or the command's tail) of every process in session `sid`."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,sid=,args="], capture_output=True, text=True).stdout
    procs = {}
    for line in out.splitlines():
        pid, s, args = line.split(None, 2)
        if int(s) == sid:
            procs[int(pid)] = "main" if int(pid) == sid else args.split(" ")[0][-30:]
    return procs


def _schedstat(pids: dict[int, str]) -> dict[tuple[int, str], tuple[int, int]]:
    """(pid, thread name) -> (ns on a core, ns in the run queue) of every thread of `pids`."""
    out = {}
    for pid in pids:
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
                run, wait, _ = map(int, Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split())
                out[(pid, f"{name} ({tid})")] = (run, wait)
        except FileNotFoundError:  # a process or thread that ended
            continue
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="cartpole", choices=sorted(CONFIGS))
    p.add_argument(
        "--mode", default="async_acting_in_workers", help="a placement of the config's surge_modes"
    )
    p.add_argument("--warmup", type=float, default=25.0, help="seconds before the window")
    p.add_argument("--seconds", type=float, default=20.0, help="the window's length")
    p.add_argument("extra", nargs="*", help="flags appended to the config's (after --)")
    a = p.parse_args(argv)
    cfg = CONFIGS[a.config]
    workdir = Path(tempfile.mkdtemp(prefix="surge_run_queue_"))
    cmd = [
        sys.executable, "-m", "surge.train", *cfg.surge_args, *cfg.surge_modes[a.mode], *a.extra,
        "--train_for_env_steps=10000000000", f"--train_dir={workdir}", "--experiment=run_queue",
        "--decorrelate_experience_max_seconds=0", "--save_every_sec=100000",
    ]  # fmt: skip
    with open(workdir / "log.txt", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
    try:
        time.sleep(a.warmup)
        pids = _session_processes(proc.pid)
        before, t0 = _schedstat(pids), time.monotonic()
        time.sleep(a.seconds)
        after, wall = _schedstat(pids), (time.monotonic() - t0) * 1e9
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=120)
    per_proc: dict[int, list[float]] = {}
    print(f"{a.config} ({a.mode}), {a.seconds:.0f} s window; shares of wall time; log: {workdir / 'log.txt'}")
    print("| process | thread | run | run queue | sleep |\n|---|---|---|---|---|")
    for key in sorted(after, key=lambda k: (pids[k[0]], k[1])):
        if key not in before:
            continue
        run, wait = ((x - y) / wall for x, y in zip(after[key], before[key], strict=True))
        acc = per_proc.setdefault(key[0], [0.0, 0.0, 0.0])
        acc[0], acc[1], acc[2] = acc[0] + run, acc[1] + wait, acc[2] + 1
        if "learner" in pids[key[0]] and run > 0.005:
            print(f"| {pids[key[0]]} | {key[1]} | {run:.3f} | {wait:.3f} | {max(0.0, 1 - run - wait):.3f} |")
    for pid, (run, wait, threads) in sorted(per_proc.items(), key=lambda kv: pids[kv[0]]):
        if run > 0.001:
            sleep = max(0.0, threads - run - wait) if threads == 1 else float("nan")
            print(f"| {pids[pid]} | all {threads:.0f} | {run:.3f} | {wait:.3f} | {sleep:.3f} |")
    total = sum(v[0] for v in per_proc.values())
    print(f"cores busy with the run: {total:.2f}")


if __name__ == "__main__":
    main()
