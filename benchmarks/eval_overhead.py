"""Does evaluation during training slow the sampler? Async CartPole-v1 runs without and with
`--eval_every_env_frames`, alternating (off, on, off, on, ...) so that a change in the machine's
load hits both arms alike; prints each run's env frames/s (from the first env steps on,
`TrainingRun.summary`) and the ratio of the means (with eval / without).

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 python benchmarks/eval_overhead.py --pairs=3 --frames=60000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun


def one_run(train_dir: str, name: str, frames: int, extra: list[str]) -> float:
    argv = [
        "--env=CartPole-v1",
        f"--train_dir={train_dir}",
        f"--experiment={name}",
        f"--train_for_env_steps={frames}",
        "--num_workers=2",
        "--num_envs_per_worker=8",
        "--num_torch_threads=1",
        "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
        "--seed=1",
        "--restart_behavior=restart",
        *extra,
    ]
    run = TrainingRun(parse_cfg(argv))
    assert run.run() == "done"
    return float(run.summary["env_frames_per_sec"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--frames", type=int, default=60000)
    ap.add_argument("--eval_every_env_frames", type=int, default=10000)
    ap.add_argument("--eval_episodes", type=int, default=10)
    args = ap.parse_args()
    with_eval = [
        f"--eval_every_env_frames={args.eval_every_env_frames}",
        f"--eval_episodes={args.eval_episodes}",
    ]
    rates: dict[str, list[float]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            for arm, extra in (("off", []), ("on", with_eval)):
                rate = one_run(tmp, f"{arm}_{i}", args.frames, extra)
                rates[arm].append(rate)
                print(f"pair {i} eval {arm}: {rate:.1f} env frames/s", flush=True)
    off, on = statistics.mean(rates["off"]), statistics.mean(rates["on"])
    print("| eval | runs | env frames/s (mean) | per run |")
    print("|---|---|---|---|")
    for arm, mean in (("off", off), ("on", on)):
        print(f"| {arm} | {len(rates[arm])} | {mean:.1f} | {', '.join(f'{r:.0f}' for r in rates[arm])} |")
    print(f"ratio with eval / without: {on / off:.3f}")


if __name__ == "__main__":
    main()
