"""Checks a `surge tune` result: short training runs of an env with its defaults and with the tuned
YAML (`--cfg=FILE`), alternating (which goes first swaps every round), N rounds; prints each run and
the medians in env frames/s after start-up (the run's summary), and the median ratio tuned/defaults.

    python benchmarks/tune_ab.py --env=CartPole-v1 --yaml=tune_CartPole-v1.yaml --rounds 3 --seconds 30
    python benchmarks/tune_ab.py --env=atari_pong --yaml=tune_atari_pong.yaml --rounds 3 --seconds 60 -- --num_torch_threads=1

Flags after `--` go to both runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from surge.tune.measure import measure  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", required=True)
    p.add_argument("--yaml", required=True, help="the file surge tune wrote")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=30, help="--train_for_seconds of each run")
    p.add_argument("extra", nargs="*", help="flags for both runs (after --)")
    a = p.parse_args()
    arms = {
        "defaults": [f"--env={a.env}", *a.extra],
        "tuned": [f"--cfg={a.yaml}", f"--env={a.env}", *a.extra],
    }
    rates: dict[str, list[float]] = {k: [] for k in arms}
    with tempfile.TemporaryDirectory(prefix="tune_ab_") as tmp:
        for r in range(a.rounds):
            order = list(arms) if r % 2 == 0 else list(reversed(arms))
            for name in order:
                m = measure(arms[name], a.seconds, Path(tmp), f"{name}_{r}")
                rates[name].append(m.rate)
                print(
                    f"round {r + 1} {name}: {m.rate:.0f} env frames/s ({m.wall_seconds:.0f} s wall){' ' + m.error if m.error else ''}",
                    flush=True,
                )
    med = {k: statistics.median(x for x in v if x == x) for k, v in rates.items()}
    ratios = [t / d for t, d in zip(rates["tuned"], rates["defaults"], strict=True)]
    print(f"\n{a.env}, {a.rounds} rounds of {a.seconds} s training runs, env frames/s after start-up:")
    for k, v in rates.items():
        print(f"{k}: {' / '.join(f'{x:.0f}' for x in v)}; median {med[k]:.0f}")
    print(
        f"tuned / defaults: median of the ratios {statistics.median(ratios):.2f}x; ratio of the medians {med['tuned'] / med['defaults']:.2f}x"
    )


if __name__ == "__main__":
    main()
