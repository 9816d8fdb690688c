"""Throughput of a population against one policy at the same total batch, alternating: async
training on a benchmark config with 1 policy (`--batch_size=B`) and with P policies on the random
mapping (`--batch_size=B/P` each, so the learners together train on B samples per iteration, as
the one policy does), for one or several checkouts, N rounds; prints each run and the medians.

Every agent step is trained on once by its own policy's learner, and the trajectory pool stops
collection while the learners are behind (back-pressure), so a run's env frames/s is also the rate
at which its learners together consume samples: the ratio P-policy / 1-policy is the one the
"each learner's cost follows its own samples" criterion asks about (issue 19: >= 0.9).

    python benchmarks/population_ab.py --config cartpole --policies 4 --rounds 3 .
    python benchmarks/population_ab.py --config cartpole /tmp/main_checkout .   # before / after
    python benchmarks/population_ab.py --extra "--policy_workers_per_policy=1" .
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import run_surge  # noqa: E402
from configs import CONFIGS  # noqa: E402


def _arg(args: list[str], name: str) -> str:
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    return values[-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkouts", nargs="+", type=Path, help="surge checkouts (repository roots)")
    p.add_argument("--config", default="cartpole", choices=sorted(CONFIGS))
    p.add_argument("--policies", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--frames", type=int, default=400_000, help="env frames per run")
    p.add_argument("--timeout", type=float, default=240.0, help="wall-clock limit of one run, seconds")
    p.add_argument("--extra", default="", help="flags added to every run, one string")
    a = p.parse_args()
    cfg = CONFIGS[a.config]
    total = int(_arg(cfg.surge_args, "batch_size"))
    if total % a.policies:
        raise SystemExit(f"batch_size {total} is not divisible by {a.policies} policies")
    extra = a.extra.split()
    modes = {"1 policy": ["--serial_mode=False", "--num_policies=1", f"--batch_size={total}", *extra]}
    if a.policies > 1:  # --policies 1: one policy alone (a checkout's single-policy throughput)
        modes[f"{a.policies} policies"] = [
            "--serial_mode=False",
            f"--num_policies={a.policies}",
            "--policy_mapping=random",
            f"--batch_size={total // a.policies}",
            *extra,
        ]
    roots = [c.resolve() for c in a.checkouts]
    results: dict[tuple[Path, str], list[float]] = {}
    for i in range(a.rounds):
        for r in roots:
            for name, mode in modes.items():
                with tempfile.TemporaryDirectory() as work:
                    fps, _ = run_surge(cfg, mode, a.frames, Path(work), a.timeout, r)
                results.setdefault((r, name), []).append(fps)
                print(f"round {i + 1} {r} {name}: {fps:.0f} env frames/s", flush=True)
    print(f"\n{a.config}, async, total batch {total} samples, {a.frames} env frames per run: env frames/s")
    print("| checkout | " + " | ".join(modes) + f" | {a.policies} policies / 1 policy |")
    print("|---|" + "---|" * (len(modes) + 1))
    ratio = (lambda med: f"{med[1] / med[0]:.2f}") if len(modes) > 1 else (lambda med: "-")
    for r in roots:
        med = [statistics.median(results[(r, m)]) for m in modes]
        cells = [
            f"{' / '.join(f'{v:.0f}' for v in results[(r, m)])} (median {x:.0f})"
            for m, x in zip(modes, med, strict=True)
        ]
        print(f"| {r} | " + " | ".join(cells) + f" | {ratio(med)} |")


if __name__ == "__main__":
    main()
