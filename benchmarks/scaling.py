"""How surge's cost grows: env frames/s, memory, start-up time and CPU per env frame by process
role, against the number of envs, rollout workers, policies and the observation size.

    python benchmarks/scaling.py --rounds 2 --seconds 60 --out /tmp/scaling
    python benchmarks/scaling.py --axes cores --rounds 3 --seconds 60 --out /tmp/scaling_cores

Every run is `surge train` in the async placement on a variant of the benchmark's `cartpole`
config (`configs.py`: 2 workers x 20 envs in 2 splits, 2 inference workers, 512-512 MLP, batch 512,
1 epoch), one axis changed at a time:

- `envs`: 8, 32, 128, 256 envs in all (2 workers, 2 splits each);
- `workers`: 1 worker x 40 envs, 2 workers x 20 envs (40 envs in all either way);
- `policies`: 1, 2, 4, 8 policies on the random agent -> policy mapping, at the same total batch
  (`--batch_size=512/P`), one inference worker per policy from 2 policies on (two for one policy);
- `obs`: CartPole's 4-vector (MLP), Atari Pong's 4 x 84 x 84 stack and doom_basic's 3 x 72 x 128
  (each family's conv model): the `pong_1epoch` and `doom_basic` configs;
- `cores`: the cartpole config on both cores and pinned to one (`taskset -c 0`, which every child
  process inherits): the check of the cost model's prediction for one core.

Rounds alternate the variants of every axis (each round runs each distinct variant once), so that
machine noise hits them alike. For each run:

- env frames/s: the slope of env frames over wall time between the run's first and last progress
  report (`--report_interval_sec=1`), start-up and shut-down excluded, as in
  `compare_sample_factory.py`;
- start-up (s): from launching the command to its first progress report with env frames > 0
  (1 s resolution: the report interval);
- memory (MiB): the peak over the run of the summed proportional set size (PSS, from
  `/proc/PID/smaps_rollup`) of the run's processes; PSS splits shared pages (the trajectory
  buffers, torch's libraries) among the processes that map them, so the sum counts them once;
- CPU per env frame (µs), by role (main, learner, inference, rollout, other): user + system CPU
  time of each process (`/proc/PID/stat`) between the first and last progress report, divided by
  the env frames between them. Roles come from the run's "Started process NAME (pid N)" lines;
- the busiest process: the one with the most CPU seconds per wall second over the same window,
  with that figure. A role that is one process (a policy's learner or inference worker) near 1.0
  is what the rate waits on: more cores do not help it.

`--config NAME --extra FLAGS` measures benchmark configs instead of the axes, e.g. on a GPU machine:

    python benchmarks/scaling.py --config doom_benchmark --config pong_1epoch \
        --extra "--device=gpu --num_workers=16" --rounds 1 --seconds 40 --out /tmp/gpu_roles

The cost model (`fit`): the CPU cost of an env frame is the sum of the roles' costs, and a role
that is one process per policy (the learner) cannot go faster than one core:

    fps(C cores) = min(C * u / c_total, 1e6 / c_learner)        (c in µs per env frame)

with u the cores' utilisation measured on 2 cores. `--axes cores` checks it: the 2-core run's
costs predict the 1-core rate as `1e6 * u1 / c_total` (u1: the one core's utilisation, 1 when it
is saturated), against the rate measured pinned to one core. The envs axis is fitted with
c_total(n) = a + b / (n / splits): a per-frame cost plus a per-request cost shared by the envs of
a split. Prints markdown tables; every run's log stays in `--out`.

`cost_model.py` extends this model to a GPU and to other machines: a ceiling for every single
process (the inference workers and the main process too), the host cost of kernel launches, and
speed ratios that carry this machine's figures to another CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import SURGE_LINE, _kill_group, _pythonpath, _slope, _ts  # noqa: E402
from configs import CONFIGS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STARTED = re.compile(r"Started process (\S+) \(pid (\d+)\)")
CLK = os.sysconf("SC_CLK_TCK")
NAN = float("nan")


@dataclass
class Variant:
    """One run's config: `args` are `surge train` flags (the budget and paths are added)."""

    label: str
    args: list[str]
    taskset: str | None = None  # CPU list for `taskset -c`, None: all cores


@dataclass
class Result:
    fps: float = NAN  # env frames/s
    startup_s: float = NAN
    pss_mib: float = NAN
    cpu_us: dict[str, float] = field(default_factory=dict)  # role -> CPU µs per env frame
    util: float = NAN  # CPU seconds per wall second, all processes
    busiest: str = ""  # the role of the process with the most CPU seconds per wall second
    busiest_util: float = NAN  # ... and its CPU seconds per wall second (1.0: one core saturated)
    load: float = NAN  # the machine's 1-minute load average at the end of the run


def _with(args: list[str], **flags: object) -> list[str]:
    """`args` with each `--name=value` of `flags` replacing the flag of that name (or added)."""
    out = [a for a in args if a.split("=")[0].lstrip("-") not in flags]
    return out + [f"--{k}={v}" for k, v in flags.items()]


def axes() -> dict[str, list[Variant]]:
    base = CONFIGS["cartpole"].surge_args
    per_policy_batch = 512
    return {
        "envs": [
            Variant(f"{n} envs", _with(base, num_workers=2, num_envs_per_worker=n // 2))
            for n in (8, 32, 128, 256)
        ],
        "workers": [
            Variant("1 worker x 40 envs", _with(base, num_workers=1, num_envs_per_worker=40)),
            Variant("2 workers x 20 envs", list(base)),
        ],
        "policies": [
            Variant(
                f"{p} polic{'y' if p == 1 else 'ies'}",
                _with(base, num_policies=p, batch_size=per_policy_batch // p, policy_workers_per_policy=1)
                if p > 1
                else list(base),  # the base config: batch 512, 2 inference workers
            )
            for p in (1, 2, 4, 8)
        ],
        "obs": [
            Variant("vector 4 (CartPole, MLP)", list(base)),
            Variant("4x84x84 (atari_pong, conv)", list(CONFIGS["pong_1epoch"].surge_args)),
            Variant("3x72x128 (doom_basic, conv+GRU)", list(CONFIGS["doom_basic"].surge_args)),
        ],
        "cores": [
            Variant("2 cores", list(base)),
            Variant("1 core (taskset -c 0)", list(base), taskset="0"),
        ],
    }


def _children(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    parent: dict[int, int] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                parent[int(p)] = int(open(f"/proc/{p}/stat").read().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        out.append(q)
        todo += [c for c, pp in parent.items() if pp == q]
    return out


def _cpu_s(pid: int) -> float:
    st = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    return (int(st[11]) + int(st[12])) / CLK


def _pss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/smaps_rollup"):
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def _role(name: str) -> str:
    for role in ("learner", "inference", "rollout"):
        if name.startswith(role):
            return role
    return "other"


def run(v: Variant, seconds: float, workdir: Path) -> Result:
    """One run of `v` for about `seconds` of training (the budget is a frame count far beyond
    it; the run is stopped with SIGINT, as Ctrl+C would, after `seconds` past its first report)."""
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [
        *(["taskset", "-c", v.taskset] if v.taskset else []),
        sys.executable,
        "-m",
        "surge.train",
        *v.args,
        "--serial_mode=False",
        "--train_for_env_steps=1000000000",
        f"--train_dir={workdir}",
        "--experiment=run",
        "--restart_behavior=restart",
        "--report_interval_sec=1",
        "--decorrelate_experience_max_seconds=0",
        "--save_every_sec=100000",
    ]
    err = workdir / "stderr.txt"
    env = {**os.environ, "PYTHONPATH": _pythonpath(ROOT)}
    t0 = time.time()
    samples: list[tuple[float, dict[int, float]]] = []  # (wall time, pid -> CPU s)
    peak_pss = 0
    with open(workdir / "stdout.txt", "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, cwd=ROOT, env=env, start_new_session=True)
        first: float | None = None
        try:
            while proc.poll() is None:
                time.sleep(1.0)
                now = time.time()
                pids = _children(proc.pid)
                cpu, pss = {}, 0
                for p in pids:
                    try:
                        cpu[p] = _cpu_s(p)
                        pss += _pss_kib(p)
                    except (OSError, ValueError, IndexError):
                        pass
                samples.append((now, cpu))
                peak_pss = max(peak_pss, pss)
                if first is None and any(
                    (m := SURGE_LINE.match(line)) and int(m.group(2)) > 0
                    for line in err.read_text(errors="replace").splitlines()
                ):
                    first = now
                if first is not None and now - first > seconds:
                    proc.send_signal(signal.SIGINT)
                    try:
                        proc.wait(timeout=60)
                    except subprocess.TimeoutExpired:
                        pass
                    break
                if now - t0 > seconds + 300:
                    print(f"  {v.label}: no progress report in {now - t0:.0f} s", file=sys.stderr)
                    break
        finally:
            _kill_group(proc.pid)
            proc.wait()
    lines = err.read_text(errors="replace").splitlines()
    points = [(_ts(m.group(1)), int(m.group(2))) for line in lines if (m := SURGE_LINE.match(line))]
    points = [p for p in points if p[1] > 0]
    roles = {int(m.group(2)): _role(m.group(1)) for line in lines if (m := STARTED.search(line))}
    res = Result(
        fps=_slope(points), pss_mib=peak_pss / 1024, load=float(open("/proc/loadavg").read().split()[0])
    )
    if not points:
        return res
    # log time stamps have 1 s resolution: the first report's second, against the launch time
    res.startup_s = points[0][0] + 0.5 - t0
    a, b = points[0][0], points[-1][0]
    inside = [s for s in samples if a <= s[0] <= b + 1]
    if len(inside) >= 2 and points[-1][1] > points[0][1]:
        (ta, ca), (tb, cb) = inside[0], inside[-1]
        frames = res.fps * (tb - ta)
        cost: dict[str, float] = {}
        for pid, c in cb.items():
            role = roles.get(pid, "main" if pid == proc.pid else "other")
            cost[role] = cost.get(role, 0.0) + (c - ca.get(pid, c)) / frames * 1e6
        res.cpu_us = cost
        res.util = sum(cb[p] - ca.get(p, cb[p]) for p in cb) / (tb - ta)
        per_proc = {p: (cb[p] - ca.get(p, cb[p])) / (tb - ta) for p in cb}
        top = max(per_proc, key=per_proc.__getitem__)
        res.busiest = roles.get(top, "main" if top == proc.pid else "other")
        res.busiest_util = per_proc[top]
    return res


def _med(xs: list[float]) -> float:
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else NAN


def summarise(results: dict[str, list[Result]]) -> dict[str, dict[str, float]]:
    """Per variant label: medians over rounds of fps, start-up, memory, utilisation and each role's
    CPU µs per env frame (`cpu_<role>`, and `cpu_total`)."""
    out: dict[str, dict[str, float]] = {}
    for label, rs in results.items():
        roles = sorted({r for res in rs for r in res.cpu_us})
        row = {
            "fps": _med([r.fps for r in rs]),
            "startup_s": _med([r.startup_s for r in rs]),
            "pss_mib": _med([r.pss_mib for r in rs]),
            "util": _med([r.util for r in rs]),
            "cpu_total": _med([sum(r.cpu_us.values()) if r.cpu_us else NAN for r in rs]),
        }
        for role in roles:
            row[f"cpu_{role}"] = _med([r.cpu_us.get(role, NAN) for r in rs])
        row["rounds"] = len(rs)
        row["busiest_util"] = _med([r.busiest_util for r in rs])
        out[label] = row
        out[label]["busiest"] = statistics.mode([r.busiest for r in rs])  # type: ignore[assignment]
    return out


def fit_envs(rows: list[tuple[int, float]], splits: int = 4) -> tuple[float, float]:
    """Least squares c_total(n) = a + b / (n / splits) over (n envs in all, µs per frame), `splits`
    the run's (worker, split) pairs (2 workers x 2 splits): a is the per-frame cost (µs), b the
    cost of one split's step (µs: its inference request, messages and per-split work), shared among
    the split's n / splits envs."""
    xs = [splits / n for n, _ in rows]
    ys = [c for _, c in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b


def predict_fps(row: dict[str, float], cores: float, util_per_core: float) -> float:
    """The cost model: min(cores * util_per_core / c_total, 1 / c_learner), in env frames/s."""
    bound = 1e6 * cores * util_per_core / row["cpu_total"]
    learner = row.get("cpu_learner", NAN)
    return min(bound, 1e6 / learner) if learner == learner and learner > 0 else bound


def table(summary: dict[str, dict[str, float]], labels: list[str]) -> str:
    roles = ["main", "learner", "inference", "rollout", "other"]
    head = (
        "| variant | env frames/s | start-up s | memory (PSS) MiB | CPU util | CPU µs/frame: "
        + " / ".join(roles)
        + " | total | busiest process (cores) |"
    )
    lines = [head, "|" + "---|" * 8]
    for label in labels:
        r = summary[label]
        parts = " / ".join(f"{r.get(f'cpu_{x}', NAN):.1f}" for x in roles)
        lines.append(
            f"| {label} | {r['fps']:.0f} | {r['startup_s']:.1f} | {r['pss_mib']:.0f} | {r['util']:.2f} "
            f"| {parts} | {r['cpu_total']:.1f} | {r['busiest']} {r['busiest_util']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--axes", nargs="+", default=["envs", "workers", "policies", "obs"], choices=list(axes()))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--seconds", type=float, default=60.0, help="training seconds per run after its first report"
    )
    ap.add_argument("--out", type=Path, default=Path("/tmp/surge_scaling"))
    ap.add_argument("--table_only", action="store_true", help="print the tables of the runs saved in --out")
    ap.add_argument(
        "--config",
        action="append",
        choices=sorted(CONFIGS),
        help="instead of --axes: these benchmark configs (configs.py), with --extra flags",
    )
    ap.add_argument(
        "--extra", default="", help='flags added to each --config, e.g. "--device=gpu --num_workers=16"'
    )
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda s, f: (_ for _ in ()).throw(SystemExit(128 + s)))
    all_axes = axes()
    chosen = {a: all_axes[a] for a in args.axes}
    if args.config:
        extra = args.extra.split()
        chosen = {
            "configs": [Variant(" ".join([c, *extra]), [*CONFIGS[c].surge_args, *extra]) for c in args.config]
        }
    # a variant that appears on several axes (the base config) runs once per round
    distinct: dict[str, Variant] = {}
    key_of: dict[str, str] = {}
    for vs in chosen.values():
        for v in vs:
            key = json.dumps([v.args, v.taskset])
            distinct.setdefault(key, v)
            key_of[v.label] = key
    saved = args.out / "results.json"
    results: dict[str, list[Result]] = {}
    meta = args.out / "meta.json"  # how the saved runs were made, for --table_only's header
    if args.table_only:
        results = {k: [Result(**r) for r in rs] for k, rs in json.loads(saved.read_text()).items()}
        ran = json.loads(meta.read_text()) if meta.exists() else {}
        args.rounds = max(len(rs) for rs in results.values())
        args.seconds = ran.get("seconds", float("nan"))
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({"seconds": args.seconds}))
        for rnd in range(args.rounds):
            for i, (key, v) in enumerate(distinct.items()):
                r = run(v, args.seconds, args.out / f"r{rnd}_v{i}")
                results.setdefault(key, []).append(r)
                print(
                    f"round {rnd + 1} {v.label}: {r.fps:.0f} env frames/s, start-up {r.startup_s:.1f} s, "
                    f"{r.pss_mib:.0f} MiB, util {r.util:.2f}, load {r.load:.1f}, CPU µs/frame "
                    + ", ".join(f"{k} {x:.1f}" for k, x in sorted(r.cpu_us.items())),
                    file=sys.stderr,
                    flush=True,
                )
                saved.write_text(json.dumps({k: [r.__dict__ for r in rs] for k, rs in results.items()}))
    summary = summarise(results)
    by_label = {
        v.label: summary[key_of[v.label]] for vs in chosen.values() for v in vs if key_of[v.label] in summary
    }
    print(f"medians of {args.rounds} round(s), {args.seconds:.0f} s of training per run\n")
    for name, vs in chosen.items():
        print(f"### {name}\n")
        print(table(by_label, [v.label for v in vs if v.label in by_label]))
        print()
    if "envs" in chosen:
        pts = [(n, by_label[f"{n} envs"]["cpu_total"]) for n in (8, 32, 128, 256) if f"{n} envs" in by_label]
        if len(pts) >= 2:
            a, b = fit_envs(pts)
            print(f"envs fit: c_total(n) = {a:.1f} µs + {b:.0f} µs / (n / 4 splits)")
            for n, c in pts:
                print(f"  {n} envs: measured {c:.1f} µs/frame, fit {a + b * 4 / n:.1f}")
            # the same costs predict the other axes: a split of m envs makes one request per
            # policy acting in it (P requests of about m / P envs each on the random mapping)
            for label, m, p in [("1 worker x 40 envs", 20, 1), ("2 workers x 20 envs", 10, 1)] + [
                (f"{p} polic{'y' if p == 1 else 'ies'}", 10, p) for p in (1, 2, 4, 8)
            ]:
                if label in by_label:
                    pred = a + b * p / m
                    meas = by_label[label]["cpu_total"]
                    print(
                        f"  {label}: predicted {pred:.1f} µs/frame, measured {meas:.1f} ({meas / pred:.2f})"
                    )
            print()
    if "cores" in chosen and {"2 cores", "1 core (taskset -c 0)"} <= set(by_label):
        two, one = by_label["2 cores"], by_label["1 core (taskset -c 0)"]
        per_core = two["util"] / 2
        pred_sat = predict_fps(two, 1, 1.0)
        pred_u = predict_fps(two, 1, min(1.0, per_core))
        print(
            f"cost model, 1 core from the 2-core run: c_total {two['cpu_total']:.1f} µs/frame, "
            f"utilisation {two['util']:.2f} of 2 cores\n"
            f"  predicted (core saturated): {pred_sat:.0f} env frames/s; at the 2-core run's utilisation per core: {pred_u:.0f}\n"
            f"  measured on 1 core: {one['fps']:.0f} env frames/s (utilisation {one['util']:.2f}); "
            f"prediction / measurement = {pred_sat / one['fps']:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
