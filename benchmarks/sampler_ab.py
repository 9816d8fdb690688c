"""The sampling path's throughput of several checkouts, alternating: surge's dummy sampler
(`--algo=DUMMY_SAMPLER`: the same rollout and inference workers, random actions, no learner) on a
benchmark config, N rounds; prints each round and the medians in env frames/s.

Without the learner's share of the cores, a change to the per-step cost of the sampler shows up
here at full size (a training run dilutes it), so this finds which commit slowed a config down
(`git worktree add /tmp/c <commit>` for each checkout to compare).

    python benchmarks/sampler_ab.py --config cartpole --rounds 3 /tmp/before .
    python benchmarks/sampler_ab.py --config cartpole --placement serial /tmp/before .

With `--train MODE`, each run trains instead (`surge train` in the config's placement MODE, e.g.
`async_acting_in_workers`, as `compare_sample_factory.py` runs it): a change to the learner or to
the whole run shows up there, diluted by what it does not touch; the mean episode return of each
run's last report is printed beside its rate.

    python benchmarks/sampler_ab.py --config cartpole --train async_acting_in_workers \
        --frames 1000000 --rounds 4 /tmp/before .

Every other round runs the checkouts in reverse order, so that a drift of the machine's speed
over the run does not favour the one that runs first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import run_dummy, run_surge  # noqa: E402
from configs import CONFIGS  # noqa: E402


def main(argv: list[str] | None = None) -> dict[Path, list[float]]:
    """Runs the rounds and prints them; returns each checkout's env frames/s per round."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkouts", nargs="+", type=Path, help="surge checkouts (repository roots)")
    p.add_argument("--config", default="cartpole", choices=sorted(CONFIGS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--frames", type=int, default=600_000, help="env frames per run")
    p.add_argument("--placement", choices=["async", "serial"], default="async")
    p.add_argument("--train", metavar="MODE", help="training runs in the config's placement MODE instead")
    p.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit of one run, seconds")
    a = p.parse_args(argv)
    cfg = CONFIGS[a.config]
    if a.train is not None and a.train not in cfg.surge_modes:
        p.error(f"--train {a.train}: {a.config} has the placements {', '.join(cfg.surge_modes)}")
    roots = [c.resolve() for c in a.checkouts]
    results: dict[Path, list[float]] = {r: [] for r in roots}
    for i in range(a.rounds):
        for r in roots if i % 2 == 0 else roots[::-1]:
            if a.train is None:
                fps = run_dummy(cfg, a.frames, a.timeout, r, [f"--serial_mode={a.placement == 'serial'}"])
                ret = ""
            else:
                with tempfile.TemporaryDirectory(prefix="bench_ab_") as tmp:
                    mode = [*cfg.surge_modes[a.train], "--seed=1"]
                    fps, episode_return = run_surge(cfg, mode, a.frames, Path(tmp), a.timeout, r)
                ret = f" (return {episode_return:.2f})"
            results[r].append(fps)
            print(f"round {i + 1} {r}: {fps:.0f}{ret}", flush=True)
    what = f"training, {a.train}" if a.train else f"{a.placement}, dummy sampler"
    print(f"\n{a.config}, {what}, {a.frames} env frames per run: env frames/s")
    for r in roots:
        rounds = " / ".join(f"{x:.0f}" for x in results[r])
        print(f"{r}: {rounds}; median {statistics.median(results[r]):.0f}")
    return results


if __name__ == "__main__":
    main()
