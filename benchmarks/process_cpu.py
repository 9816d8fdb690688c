"""CPU per env frame of each kind of process in a training run of either framework, for the Doom
configs: where surge and Sample Factory 2.1.1 spend the CPU a frame costs.

    python benchmarks/process_cpu.py --framework sf --seconds 60 --train_dir /tmp/sf_roles -- \\
        /work/sf-venv/bin/python -m sf_examples.vizdoom.train_vizdoom --env=doom_benchmark ...
    python benchmarks/process_cpu.py --framework surge --seconds 60 --train_dir /tmp/surge_roles -- \\
        python -m surge.train --env=doom_benchmark ...

The command runs in its own session for `--seconds` (its frame budget should be larger), then the
whole session is killed. Every second, the user + system CPU time of each of its processes is read
from `/proc/PID/stat`. Over the window between the run's first progress line with env frames > 0
and its last, each process's CPU seconds divided by the env frames in that window (the slope of its
progress lines, as `compare_sample_factory.py` measures it) is its cost per frame, summed by kind:

- game: the ViZDoom engine processes (`vizdoom` in the process name), the env's own cost;
- rollout: their parents, the rollout workers (which also run the framework's per-step Python);
- main: the launched process itself;
- rest: every other process: learner, inference worker(s) and, for Sample Factory, its batcher.

Sample Factory names none of its processes, so the rollout workers are found as the games'
parents; that is why this measures the Doom configs only. `scaling.py` splits surge's runs by the
role names its processes carry. Prints one line: env frames/s, µs per frame by kind, the total, and
the three processes with the most CPU seconds per wall second (1.0: a core).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import _kill_group, _slope, _ts  # noqa: E402

CLK = os.sysconf("SC_CLK_TCK")
PROGRESS = {
    "surge": re.compile(r"\[(\S+ \S+)\]\[INFO\] Env frames/s .*?Total env frames: (\d+)"),
    "sf": re.compile(r"\[(\S+ \S+)\]\[\d+\] Fps is .*?Total num frames: (\d+)"),
}


def _processes() -> dict[int, tuple[str, int, float]]:
    """pid -> (name, parent pid, CPU seconds) of every process."""
    out = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = open(f"/proc/{p}/stat").read()
                name = stat[stat.index("(") + 1 : stat.rindex(")")]
                f = stat.rpartition(")")[2].split()
                out[int(p)] = (name, int(f[1]), (int(f[11]) + int(f[12])) / CLK)
            except (OSError, ValueError, IndexError):
                pass
    return out


def _descendants(root: int, procs: dict[int, tuple[str, int, float]]) -> set[int]:
    found, todo = set(), [root]
    while todo:
        q = todo.pop()
        found.add(q)
        todo += [c for c, v in procs.items() if v[1] == q and c not in found]
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--framework", choices=sorted(PROGRESS), required=True)
    ap.add_argument("--seconds", type=float, default=60.0, help="wall seconds from launch to the kill")
    ap.add_argument(
        "--train_dir", type=Path, required=True, help="the run's --train_dir (logs are read there)"
    )
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then the training command")
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    a.train_dir.mkdir(parents=True, exist_ok=True)
    log = a.train_dir / "console.txt"
    samples: list[tuple[float, dict[int, tuple[str, int, float]]]] = []
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        t0 = time.time()
        try:
            while proc.poll() is None and time.time() - t0 < a.seconds:
                time.sleep(1.0)
                procs = _processes()
                samples.append(
                    (time.time(), {p: procs[p] for p in _descendants(proc.pid, procs) if p in procs})
                )
        finally:
            _kill_group(proc.pid)  # and the ViZDoom shared memory its killed games leave
            proc.wait()
    text = log.read_text(errors="replace")
    if a.framework == "sf":  # Sample Factory's progress lines go to its experiment's sf_log.txt
        text = "\n".join(p.read_text(errors="replace") for p in a.train_dir.glob("*/sf_log.txt"))
    points = [(_ts(m[1]), int(m[2])) for m in PROGRESS[a.framework].finditer(text)]
    points = [p for p in points if p[1] > 0]
    fps = _slope(points)
    if fps != fps:
        print(f"{a.framework}: fewer than two progress lines with env frames; see {log}")
        return 1
    inside = [s for s in samples if points[0][0] <= s[0] <= points[-1][0] + 1]
    (ta, before), (tb, after) = inside[0], inside[-1]
    frames = fps * (tb - ta)
    games = {p for p, v in after.items() if "vizdoom" in v[0].lower()}
    rollouts = {after[p][1] for p in games}
    cost: dict[str, float] = {}
    for p, (_, _, cpu) in after.items():
        kind = "game" if p in games else "rollout" if p in rollouts else "main" if p == proc.pid else "rest"
        cost[kind] = cost.get(kind, 0.0) + (cpu - before.get(p, after[p])[2]) / frames * 1e6
    busiest = sorted(
        ((cpu - before.get(p, after[p])[2]) / (tb - ta), name) for p, (name, _, cpu) in after.items()
    )
    print(
        f"{a.framework}: {fps:.0f} env frames/s over {tb - ta:.0f} s; CPU µs per env frame: "
        + ", ".join(f"{k} {x:.1f}" for k, x in sorted(cost.items()))
        + f"; total {sum(cost.values()):.1f}; busiest: "
        + ", ".join(f"{name} {u:.2f}" for u, name in reversed(busiest[-3:]))
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
