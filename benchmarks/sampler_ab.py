"""The sampling path's throughput of several checkouts, alternating: surge's dummy sampler
(`--algo=DUMMY_SAMPLER`: the same rollout and inference workers, random actions, no learner) on a
benchmark config, N rounds; prints each round and the medians in env frames/s.

Without the learner's share of the cores, a change to the per-step cost of the sampler shows up
here at full size (a training run dilutes it), so this finds which commit slowed a config down
(`git worktree add /tmp/c <commit>` for each checkout to compare).

    python benchmarks/sampler_ab.py --config cartpole --rounds 3 /tmp/before .
    python benchmarks/sampler_ab.py --config cartpole --placement serial /tmp/before .
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402

RESULT = re.compile(r"= ([\d.]+) env frames/s")


def run_dummy(root: Path, args: list[str], frames: int, serial: bool, timeout: float) -> float:
    """One dummy-sampler run of the checkout at `root`: env frames/s after start-up (NaN if it
    failed)."""
    with tempfile.TemporaryDirectory(prefix="sampler_ab_") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "surge.train",
            "--algo=DUMMY_SAMPLER",
            *args,
            f"--sample_env_frames={frames}",
            "--decorrelate_experience_max_seconds=0",
            f"--serial_mode={serial}",
            f"--train_dir={tmp}",
            "--experiment=dummy",
        ]
        env = {**os.environ, "PYTHONPATH": str(root)}
        try:
            out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return float("nan")
    m = RESULT.search(out.stdout + out.stderr)
    if m is None:
        print(f"  {root}: no result\n{(out.stdout + out.stderr)[-2000:]}", file=sys.stderr)
        return float("nan")
    return float(m.group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkouts", nargs="+", type=Path, help="surge checkouts (repository roots)")
    p.add_argument("--config", default="cartpole", choices=sorted(CONFIGS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--frames", type=int, default=600_000, help="env frames per run")
    p.add_argument("--placement", choices=["async", "serial"], default="async")
    p.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit of one run, seconds")
    a = p.parse_args()
    cfg = CONFIGS[a.config]
    roots = [c.resolve() for c in a.checkouts]
    results: dict[Path, list[float]] = {r: [] for r in roots}
    for i in range(a.rounds):
        for r in roots:
            fps = run_dummy(r, cfg.surge_args, a.frames, a.placement == "serial", a.timeout)
            results[r].append(fps)
            print(f"round {i + 1} {r}: {fps:.0f}", flush=True)
    print(f"\n{a.config}, {a.placement}, dummy sampler, {a.frames} env frames per run: env frames/s")
    for r in roots:
        rounds = " / ".join(f"{x:.0f}" for x in results[r])
        print(f"{r}: {rounds}; median {statistics.median(results[r]):.0f}")


if __name__ == "__main__":
    main()
