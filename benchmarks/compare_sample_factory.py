"""surge vs Sample Factory 2.1.1: training throughput on the same configs, alternating runs.

    bash benchmarks/sf_setup.sh /work/sf-venv          # once: Sample Factory in its own venv
    python benchmarks/compare_sample_factory.py --rounds 3 --config pong_example

Every round runs each framework in each of its placements (async, serial) on the config for a fixed
number of env frames, alternating frameworks so that machine noise hits both alike. A run's
throughput is the slope of env frames over wall time from its first progress report to its last,
start-up and shut-down excluded. The table gives the median over rounds of each framework's best
placement, their ratio, surge's dummy sampler (random actions through the same sampler) and, with
`--bound`, the compute bound from `compute_bound.py` and surge's fraction of it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS, BenchConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SURGE_LINE = re.compile(r"^\[(\d+-\d+-\d+ [\d:]+)\]\[INFO\] Env frames/s .*Total env frames: (\d+)\.")
SF_LINE = re.compile(r"^\[(\d+-\d+-\d+ [\d:,]+)\]\[\d+\] Fps is .*Total num frames: (\d+)\.")


def _slope(points: list[tuple[float, int]]) -> float:
    """Env frames per second between the first report with frames > 0 and the last one."""
    points = [p for p in points if p[1] > 0]
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return float("nan")
    return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])


def _ts(text: str) -> float:
    return time.mktime(time.strptime(text.split(",")[0], "%Y-%m-%d %H:%M:%S")) + (
        int(text.split(",")[1]) / 1000 if "," in text else 0.0
    )


def run_surge(cfg: BenchConfig, mode: list[str], frames: int, workdir: Path, timeout: float) -> float:
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
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    points = [
        (_ts(m.group(1)), int(m.group(2)))
        for line in out.stderr.splitlines()
        if (m := SURGE_LINE.match(line))
    ]
    if out.returncode != 0:
        print(f"  surge failed ({out.returncode}): {out.stderr[-2000:]}", file=sys.stderr)
        return float("nan")
    return _slope(points)


def run_sf(
    cfg: BenchConfig, mode: list[str], frames: int, workdir: Path, sf_python: str, timeout: float
) -> float:
    """One Sample Factory run; it can hang on errors, hence the wall-clock limit."""
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
    try:
        subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=workdir)
    except subprocess.TimeoutExpired:
        print("  sample factory hit the wall-clock limit; using its log up to then", file=sys.stderr)
    log = workdir / "sf" / "sf_log.txt"
    if not log.exists():
        return float("nan")
    points = [
        (_ts(m.group(1)), int(m.group(2)))
        for line in log.read_text().splitlines()
        if (m := SF_LINE.match(line))
    ]
    return _slope(points)


def run_dummy(cfg: BenchConfig, frames: int, timeout: float) -> float:
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        "--algo=DUMMY_SAMPLER",
        *cfg.surge_args,
        f"--sample_env_frames={frames}",
        "--decorrelate_experience_max_seconds=0",
        "--train_dir=/tmp/surge_dummy",
        "--experiment=dummy",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    m = re.search(r"= ([\d.]+) env frames/s", out.stdout)
    return float(m.group(1)) if m else float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", choices=sorted(CONFIGS), help="default: all")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--frames-scale", type=float, default=1.0, help="multiply each config's frame budget")
    p.add_argument("--sf-python", default="/work/sf-venv/bin/python")
    p.add_argument("--timeout", type=float, default=900.0, help="wall-clock limit of one run, seconds")
    p.add_argument(
        "--bound",
        action="append",
        default=[],
        metavar="CONFIG=FPS",
        help="compute bound from compute_bound.py, e.g. pong_example=1700",
    )
    args = p.parse_args(argv)
    bounds = {k: float(v) for k, v in (b.split("=") for b in args.bound)}
    rows = []
    for name in args.config or list(CONFIGS):
        cfg = CONFIGS[name]
        frames = int(cfg.frames * args.frames_scale)
        results: dict[str, list[float]] = {}
        for r in range(args.rounds):
            order = [("surge", m) for m in cfg.surge_modes] + [("sf", m) for m in cfg.sf_modes]
            if r % 2:
                order.reverse()
            for fw, mode in order:
                work = Path(tempfile.mkdtemp(prefix=f"bench_{name}_{fw}_"))
                try:
                    if fw == "surge":
                        fps = run_surge(cfg, cfg.surge_modes[mode], frames, work, args.timeout)
                    else:
                        fps = run_sf(cfg, cfg.sf_modes[mode], frames, work, args.sf_python, args.timeout)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                results.setdefault(f"{fw}/{mode}", []).append(fps)
                print(f"[{name}] round {r + 1}: {fw} {mode}: {fps:.0f} env frames/s", flush=True)
        med = {k: statistics.median(v) for k, v in results.items()}
        best = {fw: max((v, k) for k, v in med.items() if k.startswith(fw)) for fw in ("surge", "sf")}
        dummy = run_dummy(cfg, frames, args.timeout)
        rows.append((name, med, best, dummy, bounds.get(name)))
    print(
        "\n| config | surge async | surge serial | SF async | SF serial | surge best / SF best | "
        "dummy sampler | bound | surge / bound |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, med, best, dummy, bound in rows:
        ratio = best["surge"][0] / best["sf"][0] if best["sf"][0] == best["sf"][0] else float("nan")
        frac = f"{best['surge'][0] / bound:.0%}" if bound else "-"
        cells = [
            f"{med.get(k, float('nan')):.0f}"
            for k in ("surge/async", "surge/serial", "sf/async", "sf/serial")
        ]
        print(f"| {name} | {' | '.join(cells)} | {ratio:.2f}x | {dummy:.0f} | {bound or '-'} | {frac} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
