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

With `--variant=FLAGS` (twice or more; with `=`, as FLAGS start with dashes), each checkout runs once per variant, the variant's flags
appended to the config's (the last value of a flag wins): a layout or setting compared on the same
code, e.g. one rollout worker with all the config's envs against the config's two:

    python benchmarks/sampler_ab.py --config cartpole --train async_acting_in_workers \
        --frames 1000000 --variant= --variant="--num_workers=1 --num_envs_per_worker=40" .

Every other round runs the checkouts (and variants) in reverse order, so that a drift of the
machine's speed over the run does not favour the one that runs first.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import run_dummy, run_surge  # noqa: E402
from configs import CONFIGS  # noqa: E402


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    """Runs the rounds and prints them; returns each run label's env frames/s per round (the
    label: the checkout's path, followed by ` [FLAGS]` with `--variant`)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkouts", nargs="+", type=Path, help="surge checkouts (repository roots)")
    p.add_argument("--config", default="cartpole", choices=sorted(CONFIGS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--frames", type=int, default=600_000, help="env frames per run")
    p.add_argument("--placement", choices=["async", "serial"], default="async")
    p.add_argument("--train", metavar="MODE", help="training runs in the config's placement MODE instead")
    p.add_argument(
        "--variant",
        action="append",
        metavar="FLAGS",
        help="--variant=FLAGS: flags appended to the config's for one set of runs (twice or more; empty: none)",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit of one run, seconds")
    a = p.parse_args(argv)
    cfg = CONFIGS[a.config]
    if a.train is not None and a.train not in cfg.surge_modes:
        p.error(f"--train {a.train}: {a.config} has the placements {', '.join(cfg.surge_modes)}")
    if a.variant is not None and len(a.variant) < 2:
        p.error("--variant: give two or more flag sets to compare (--variant= for the config as it is)")
    variants = [shlex.split(v) for v in a.variant] if a.variant else [[]]
    runs = [(c.resolve(), v) for c in a.checkouts for v in variants]

    def label(root: Path, flags: list[str]) -> str:
        return f"{root} [{' '.join(flags)}]" if a.variant else str(root)

    results: dict[str, list[float]] = {label(*r): [] for r in runs}
    for i in range(a.rounds):
        for root, flags in runs if i % 2 == 0 else runs[::-1]:
            if a.train is None:
                mode = [f"--serial_mode={a.placement == 'serial'}", *flags]
                fps = run_dummy(cfg, a.frames, a.timeout, root, mode)
                ret = ""
            else:
                with tempfile.TemporaryDirectory(prefix="bench_ab_") as tmp:
                    mode = [*cfg.surge_modes[a.train], "--seed=1", *flags]
                    fps, episode_return = run_surge(cfg, mode, a.frames, Path(tmp), a.timeout, root)
                ret = f" (return {episode_return:.2f})"
            results[label(root, flags)].append(fps)
            print(f"round {i + 1} {label(root, flags)}: {fps:.0f}{ret}", flush=True)
    what = f"training, {a.train}" if a.train else f"{a.placement}, dummy sampler"
    print(f"\n{a.config}, {what}, {a.frames} env frames per run: env frames/s")
    first = statistics.median(next(iter(results.values())))
    for name, fps_list in results.items():
        rounds = " / ".join(f"{x:.0f}" for x in fps_list)
        med = statistics.median(fps_list)
        print(f"{name}: {rounds}; median {med:.0f} ({med / first:.3f}x the first)")
    return results


if __name__ == "__main__":
    main()
