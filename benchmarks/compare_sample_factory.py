"""surge vs Sample Factory 2.1.1: training throughput on the same configs, alternating runs.

    bash benchmarks/sf_setup.sh /work/sf-venv          # once: Sample Factory in its own venv
    python benchmarks/compare_sample_factory.py --rounds 3 --config pong_example

Every round runs each framework in each of its placements (async, serial; for Sample Factory also
`async_rl` where its example learns synchronously, see configs.py) on the config for a fixed
number of env frames, alternating frameworks so that machine noise hits both alike. A run's
throughput is the slope of env frames over wall time from its first progress report to its last,
start-up and shut-down excluded. The table gives the median over rounds of each framework's best
placement, their ratio, surge's dummy sampler (random actions through the same sampler) and, with
`--bound`, the compute bound from `compute_bound.py` and surge's fraction of it. With
`--measure-bound`, every round also runs `compute_bound.py` on the config (one repeat of each
component) among the training runs, so the bound is measured in the same stretch of the machine's
day as the runs it divides: the table gives the median of the rounds' bounds, and each round prints
its own bound and surge's fraction of it.

Each run also records the mean episode return of its last progress report (surge: `Episode return:`,
averaged over its last `stats_avg` episodes; Sample Factory: `Avg episode reward:` of policy 0, the
same average), in surge's units (`BenchConfig.sf_return_scale`). The table's return columns are the
median over all of a framework's runs (every placement, every round) on the same frame budget, "-"
where no run reported one.

With `--surge-before PATH` (a checkout of an earlier surge commit, e.g. `git worktree add
/tmp/surge_before <commit>`), every round also runs that checkout ("before") in the same alternating
order, with the same Python environment, and the table gives both surge versions' ratio to Sample
Factory: a before/after comparison of a change measured in one run.

Each run is its own session; when it ends (or hits `--timeout`) whatever is left of its process
group is killed, along with the ViZDoom shared-memory segments of its killed game processes.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS, BenchConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SURGE_LINE = re.compile(r"^\[(\d+-\d+-\d+ [\d:,]+)\]\[INFO\] Env frames/s .*Total env frames: (\d+)[ .]")
SF_LINE = re.compile(r"^\[(\d+-\d+-\d+ [\d:,]+)\]\[\d+\] Fps is .*Total num frames: (\d+)\.")
SURGE_RETURN = re.compile(r"Episode return: (\S+?),")
# SF 2.1.1: "[2026-11-21 13:28:13,150][02012] Avg episode reward: [(0, '-1.525')]"
SF_RETURN = re.compile(r"^\[[^]]+\]\[\d+\] Avg episode reward: \[\(0, '([^']+)'\)")
NAN = float("nan")


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return NAN


def _kill_group(pgid: int) -> None:
    """Kills what is left of a run's process group, then removes the ViZDoom shared memory of its
    game processes (a killed ViZDoom cannot unlink its `/dev/shm/ViZDoom{SM,MQCtr,MQDoom}<id>`)."""
    instances = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) != pgid:
                continue
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, ProcessLookupError):
            continue
        if b"+viz_instance_id" in args[:-1]:
            instances.append(args[args.index(b"+viz_instance_id") + 1].decode())
    try:
        os.killpg(pgid, signal.SIGTERM)
        time.sleep(2.0)
        os.killpg(pgid, signal.SIGKILL)  # ViZDoom's game processes ignore SIGTERM
    except ProcessLookupError:
        pass
    for inst in instances:
        for prefix in ("ViZDoomSM", "ViZDoomMQCtr", "ViZDoomMQDoom"):
            Path(f"/dev/shm/{prefix}{inst}").unlink(missing_ok=True)


def _run(
    cmd: list[str], timeout: float, cwd: Path, out: Path, env: dict[str, str] | None = None
) -> int | None:
    """Runs `cmd` in its own session, stdout to `out` and stderr to `out` + ".err"; its exit code, or
    None on timeout. Sample Factory can hang on errors and at exit, hence the wall-clock limit. The
    run's process group is killed however this returns, Ctrl+C and SIGTERM of this script included
    (a killed Sample Factory leaves its spawned children running otherwise)."""
    with open(out, "w") as f, open(f"{out}.err", "w") as e:
        proc = subprocess.Popen(cmd, stdout=f, stderr=e, cwd=cwd, env=env, start_new_session=True)
        code: int | None = None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _kill_group(proc.pid)
            proc.wait()
    return code


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through _run's cleanup


def _slope(points: list[tuple[float, int]]) -> float:
    """Env frames per second between the first report with frames > 0 and the first report of the
    final count. Reports after the last frame came in (a summary line printed after the workers are
    closed and the checkpoint written) add shut-down time without frames, so they are left out."""
    points = [p for p in points if p[1] > 0]
    while len(points) >= 2 and points[-2][1] == points[-1][1]:
        points.pop()
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return float("nan")
    return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])


def _ts(text: str) -> float:
    return time.mktime(time.strptime(text.split(",")[0], "%Y-%m-%d %H:%M:%S")) + (
        int(text.split(",")[1]) / 1000 if "," in text else 0.0
    )


def _pythonpath(root: Path) -> str:
    """The checkout at `root` first, then whatever PYTHONPATH already holds (packages installed with
    `pip --target`, as on a lent GPU machine)."""
    return os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))


def run_surge(
    cfg: BenchConfig, mode: list[str], frames: int, workdir: Path, timeout: float, root: Path = ROOT
) -> tuple[float, float]:
    """One surge run of the checkout at `root`: (env frames/s, mean episode return of its last
    report)."""
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        *cfg.surge_args,
        *mode,
        f"--train_for_env_steps={frames}",
        f"--train_dir={workdir}",
        "--experiment=surge",
        "--restart_behavior=restart",
        "--report_interval_sec=2",
        "--decorrelate_experience_max_seconds=0",
        "--save_every_sec=100000",
    ]
    out = workdir / "surge_console.txt"
    code = _run(cmd, timeout, root, out, env={**os.environ, "PYTHONPATH": _pythonpath(root)})
    lines = Path(f"{out}.err").read_text(errors="replace").splitlines()  # the log goes to stderr
    points, ret = [], NAN
    for line in lines:
        if m := SURGE_LINE.match(line):
            points.append((_ts(m.group(1)), int(m.group(2))))
            if r := SURGE_RETURN.search(line):
                ret = _float(r.group(1))
    if code is None:
        print("  surge hit the wall-clock limit; using its log up to then", file=sys.stderr)
    elif code != 0:
        tail = "\n".join(lines[-30:])
        print(f"  surge failed ({code}): {tail}", file=sys.stderr)
        return NAN, NAN
    return _slope(points), ret


def run_sf(
    cfg: BenchConfig, mode: list[str], frames: int, workdir: Path, sf_python: str, timeout: float
) -> tuple[float, float]:
    """One Sample Factory run: (env frames/s, mean episode return of its last report, in surge's
    units). It can hang on errors, hence the wall-clock limit."""
    cmd = [
        sf_python,
        "-m",
        cfg.sf_module,
        *cfg.sf_args,
        *mode,
        f"--train_for_env_steps={frames}",
        f"--train_dir={workdir}",
        "--experiment=sf",
        "--restart_behavior=restart",
        "--save_every_sec=100000",
        "--decorrelate_experience_max_seconds=0",
    ]
    if _run(cmd, timeout, workdir, workdir / "sf_console.txt") is None:
        print("  sample factory hit the wall-clock limit; using its log up to then", file=sys.stderr)
    log = workdir / "sf" / "sf_log.txt"
    if not log.exists():
        return NAN, NAN
    points, ret = [], NAN
    for line in log.read_text(errors="replace").splitlines():
        if m := SF_LINE.match(line):
            points.append((_ts(m.group(1)), int(m.group(2))))
        elif r := SF_RETURN.match(line):
            ret = _float(r.group(1)) * cfg.sf_return_scale
    return _slope(points), ret


def run_dummy(
    cfg: BenchConfig, frames: int, timeout: float, root: Path = ROOT, mode: list[str] | None = None
) -> float:
    """One dummy-sampler run (`--algo=DUMMY_SAMPLER`: the sampling path alone) of the checkout at
    `root` with the placement flags `mode` (default: surge's): env frames/s after start-up (nan if
    it failed)."""
    with tempfile.TemporaryDirectory(prefix="bench_dummy_") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "surge.train",
            "--algo=DUMMY_SAMPLER",
            *cfg.surge_args,
            *(mode or []),
            f"--sample_env_frames={frames}",
            "--decorrelate_experience_max_seconds=0",
            f"--train_dir={tmp}",
            "--experiment=dummy",
        ]
        log = Path(tmp) / "console.txt"
        _run(cmd, timeout, root, log, env={**os.environ, "PYTHONPATH": _pythonpath(root)})
        m = re.search(r"= ([\d.]+) env frames/s", log.read_text(errors="replace"))
    return float(m.group(1)) if m else NAN


def _median(values: list[float]) -> float:
    """Median of the values that are numbers (nan when none is)."""
    values = [v for v in values if v == v]
    return statistics.median(values) if values else NAN


def measure_bound(name: str, timeout: float) -> float:
    """The compute bound of config `name` in env frames/s: `compute_bound.py --repeats 1` in a
    subprocess (this machine's cores), parsed from its table."""
    out = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("compute_bound.py")), "--config", name, "--repeats", "1"],
        capture_output=True, text=True, timeout=timeout, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout  # fmt: skip
    row = next(line for line in out.splitlines() if line.startswith(f"| {name} |"))
    return float(row.split("|")[5])


def _fmt(value: float) -> str:
    return f"{value:.2f}" if value == value else "-"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", choices=sorted(CONFIGS), help="default: all")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--frames-scale", type=float, default=1.0, help="multiply each config's frame budget")
    p.add_argument("--sf-python", default="/work/sf-venv/bin/python")
    p.add_argument(
        "--surge-before",
        type=Path,
        help="checkout of an earlier surge commit to run alongside (before/after comparison)",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="wall-clock limit of one run, seconds")
    p.add_argument(
        "--bound",
        action="append",
        default=[],
        metavar="CONFIG=FPS",
        help="compute bound from compute_bound.py, e.g. pong_example=1700",
    )
    p.add_argument(
        "--measure-bound",
        action="store_true",
        help="run compute_bound.py for the config in every round, among the runs (overrides --bound)",
    )
    p.add_argument(
        "--placement",
        action="append",
        choices=["async", "serial"],
        help="run only these placements of both frameworks (default: both)",
    )
    p.add_argument(
        "--sf-mode",
        action="append",
        choices=["async", "serial", "async_rl"],
        help="run only these of Sample Factory's modes (default: all the config has, within --placement)",
    )
    p.add_argument(
        "--seed-per-round",
        action="store_true",
        help="round r runs every framework with --seed=r (default: the config's seed, 1), so the "
        "return columns come from independent seeds",
    )
    p.add_argument(
        "--extra",
        default="",
        help="flags appended to both frameworks' command lines, space-separated; the last spelling of "
        'a flag wins in both, e.g. "--device=gpu --num_workers=16" on a GPU machine',
    )
    p.add_argument(
        "--keep",
        type=Path,
        help="keep every run's folder (logs, TensorBoard summaries: learning curves) under this folder",
    )
    p.add_argument("--no-dummy", action="store_true", help="skip surge's dummy-sampler run per config")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    bounds = {k: float(v) for k, v in (b.split("=") for b in args.bound)}
    rows = []
    names = args.config or list(CONFIGS)
    if "doom_benchmark" in names and not any(
        a.startswith("--doom_scenario_path=") for a in CONFIGS["doom_benchmark"].surge_args
    ):  # refused before any run: surge would play another map than Sample Factory
        p.error(
            "doom_benchmark: Sample Factory's battle.cfg was not found, so surge would play another "
            "map than Sample Factory; install it (benchmarks/sf_setup.sh) or set SF_BATTLE_CFG"
        )
    for name in names:
        cfg = CONFIGS[name]
        if args.extra:
            extra = args.extra.split()
            cfg = dataclasses.replace(
                cfg, surge_args=[*cfg.surge_args, *extra], sf_args=[*cfg.sf_args, *extra]
            )
        frames = int(cfg.frames * args.frames_scale)
        results: dict[str, list[float]] = {}
        frameworks = ["surge", "sf"] + (["before"] if args.surge_before else [])
        returns: dict[str, list[float]] = {fw: [] for fw in frameworks}
        round_bounds: list[float] = []
        for r in range(args.rounds):
            order = [("surge", m) for m in cfg.surge_modes] + [("sf", m) for m in cfg.sf_modes]
            if args.surge_before:
                order += [("before", m) for m in cfg.surge_modes]
            if args.placement:  # "async" also selects SF's async_rl mode (an async placement)
                order = [(fw, m) for fw, m in order if m.split("_")[0] in args.placement]
            if args.sf_mode:
                order = [(fw, m) for fw, m in order if fw != "sf" or m in args.sf_mode]
            seed = [f"--seed={r + 1}"] if args.seed_per_round else []
            if r % 2:
                order.reverse()
            if args.measure_bound:  # in the middle of the round's runs
                order.insert(len(order) // 2, ("bound", ""))
            for fw, mode in order:
                if fw == "bound":
                    round_bounds.append(measure_bound(name, args.timeout))
                    print(
                        f"[{name}] round {r + 1}: compute bound {round_bounds[-1]:.0f} env frames/s",
                        flush=True,
                    )
                    continue
                if args.keep:
                    work = args.keep / f"{name}_{fw}_{mode}_round{r + 1}"
                    work.mkdir(parents=True, exist_ok=True)
                else:
                    work = Path(tempfile.mkdtemp(prefix=f"bench_{name}_{fw}_"))
                try:
                    if fw in ("surge", "before"):
                        root = args.surge_before if fw == "before" else ROOT
                        fps, ret = run_surge(
                            cfg, [*cfg.surge_modes[mode], *seed], frames, work, args.timeout, root
                        )
                    else:
                        run_args = [*cfg.sf_modes[mode], *seed]
                        fps, ret = run_sf(cfg, run_args, frames, work, args.sf_python, args.timeout)
                finally:
                    if not args.keep:
                        shutil.rmtree(work, ignore_errors=True)
                results.setdefault(f"{fw}/{mode}", []).append(fps)
                returns[fw].append(ret)
                print(
                    f"[{name}] round {r + 1}{' ' + seed[0] if seed else ''}: {fw} {mode}: "
                    f"{fps:.0f} env frames/s, return {_fmt(ret)}",
                    flush=True,
                )
        med = {k: statistics.median(v) for k, v in results.items()}
        if round_bounds:
            bounds[name] = round(statistics.median(round_bounds))
            best_per_round = [
                max(v[r] for k, v in results.items() if k.startswith("surge/")) for r in range(args.rounds)
            ]
            fracs = ", ".join(f"{b / bd:.0%}" for b, bd in zip(best_per_round, round_bounds, strict=True))
            print(f"[{name}] surge best / the round's bound, per round: {fracs}", flush=True)
        best = {fw: max((v, k) for k, v in med.items() if k.startswith(fw)) for fw in frameworks}
        ret_med = {fw: _median(v) for fw, v in returns.items()}
        dummy = NAN if args.no_dummy else run_dummy(cfg, frames, args.timeout)
        rows.append((name, med, best, dummy, bounds.get(name), ret_med))
    before_cols = " before async | before serial | before best / SF best |" if args.surge_before else ""
    print(
        "\n| config | surge async | surge serial | surge async, acting in workers | SF async | SF serial | SF async_rl | "
        f"surge best / SF best |{before_cols} dummy sampler | bound | surge / bound | surge return | SF return |"
    )
    print(
        "|---|---|---|---|---|---|---|---|"
        + ("---|---|---|" if args.surge_before else "")
        + "---|---|---|---|---|"
    )
    for name, med, best, dummy, bound, ret_med in rows:
        ratio = best["surge"][0] / best["sf"][0] if best["sf"][0] == best["sf"][0] else float("nan")
        frac = f"{best['surge'][0] / bound:.0%}" if bound else "-"
        cells = [
            f"{med[k]:.0f}" if k in med else "-"
            for k in (
                "surge/async",
                "surge/serial",
                "surge/async_acting_in_workers",
                "sf/async",
                "sf/serial",
                "sf/async_rl",
            )
        ]
        before = ""
        if "before" in best:
            b_ratio = best["before"][0] / best["sf"][0] if best["sf"][0] == best["sf"][0] else float("nan")
            b_cells = [f"{med[k]:.0f}" if k in med else "-" for k in ("before/async", "before/serial")]
            before = f" {' | '.join(b_cells)} | {b_ratio:.2f}x |"
        print(
            f"| {name} | {' | '.join(cells)} | {ratio:.2f}x |{before} {dummy:.0f} | {bound or '-'} | {frac} | "
            f"{_fmt(ret_med['surge'])} | {_fmt(ret_med['sf'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
