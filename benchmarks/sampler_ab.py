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
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import run_dummy  # noqa: E402
from configs import CONFIGS  # noqa: E402


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
            fps = run_dummy(cfg, a.frames, a.timeout, r, [f"--serial_mode={a.placement == 'serial'}"])
            results[r].append(fps)
            print(f"round {i + 1} {r}: {fps:.0f}", flush=True)
    print(f"\n{a.config}, {a.placement}, dummy sampler, {a.frames} env frames per run: env frames/s")
    for r in roots:
        rounds = " / ".join(f"{x:.0f}" for x in results[r])
        print(f"{r}: {rounds}; median {statistics.median(results[r]):.0f}")


if __name__ == "__main__":
    main()
