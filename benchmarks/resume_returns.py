"""Does the policy play worse after a resume? Trains to `--stop` frames, evaluates the saved
checkpoint with `surge enjoy` (stochastic actions, as in training), resumes to `--resume_to` and
prints the mean return the console would report after each of the first episodes of the resumed
run, beside the same numbers for a run that never stopped (same seed, serial placement).

    python benchmarks/resume_returns.py --env=cartpole --stop=40000 --resume_to=60000
    python benchmarks/resume_returns.py --env=cartpole --stop=40000 --resume_to=60000 --reset_envs
    python benchmarks/resume_returns.py --env=atari_breakout --stop=98000 --resume_to=131000 --eval_episodes=10

Extra arguments go to `surge train` (e.g. `--num_workers=2`). Runs in `--train_dir` (a temporary
folder by default). Only public entry points are used (`train`, `enjoy`, `Monitor.add_episodes`), so
the script measures any version of surge on `PYTHONPATH`.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

import numpy as np

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.enjoy import enjoy
from surge.experiment.monitor import Monitor

REPORT_AFTER = (1, 4, 14, 31, 60, 100)  # episodes after the resume (the counts and more)


def _run(args, extra: list[str], experiment: str, budget: int) -> list[tuple[int, float, float, int]]:
    """Trains `experiment` to `budget`; returns (env_frames, episode return, reported mean, window) per
    finished episode."""
    seen: list[tuple[int, float, float, int]] = []
    original = Monitor.add_episodes

    def add_episodes(self, episodes):
        for ep in episodes:
            original(self, [ep])
            seen.append((self.env_frames, ep.episode_return, self.mean_return(), len(self.returns)))

    Monitor.add_episodes = add_episodes
    try:
        cfg = parse_cfg(
            [
                f"--env={args.env}",
                f"--experiment={experiment}",
                f"--train_dir={args.train_dir}",
                "--serial_mode=True",
                f"--seed={args.seed}",
                f"--train_for_env_steps={budget}",
                *extra,
            ]
        )
        train(cfg)
    finally:
        Monitor.add_episodes = original
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="cartpole")
    parser.add_argument("--stop", type=int, default=40000)
    parser.add_argument("--resume_to", type=int, default=60000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--eval_episodes", type=int, default=50)
    parser.add_argument("--train_dir", default=None)
    parser.add_argument(
        "--reset_envs",
        action="store_true",
        help="delete sampler_state.pth before resuming: a resume that cannot restore its envs (async, VizDoom)",
    )
    args, extra = parser.parse_known_args()
    args.train_dir = args.train_dir or tempfile.mkdtemp(prefix="resume_returns_")
    logging.getLogger("surge").setLevel(logging.WARNING)

    before = _run(args, extra, "stopped", args.stop)
    stop_frames, _, stop_mean, stop_window = before[-1]
    eval_cfg = parse_cfg(
        [
            f"--env={args.env}",
            "--experiment=stopped",
            f"--train_dir={args.train_dir}",
            "--no_render=True",
            f"--max_num_episodes={args.eval_episodes}",
            f"--seed={args.seed + 1}",
            *extra,
        ],
        evaluation=True,
    )
    eval_returns = enjoy(eval_cfg)["returns"]
    (Path(args.train_dir) / "stopped" / "done").unlink(missing_ok=True)  # the same command, a larger budget
    if args.reset_envs:
        (Path(args.train_dir) / "stopped" / "sampler_state.pth").unlink(missing_ok=True)
    after = _run(args, extra, "stopped", args.resume_to)
    whole = _run(args, extra, "uninterrupted", args.resume_to)
    whole_after = [e for e in whole if e[0] > stop_frames]

    print(f"\n{args.env}, seed {args.seed}, stopped at {stop_frames} env frames, resumed to {args.resume_to}")
    print(f"reported mean return at the stop: {stop_mean:.2f} (last {stop_window} episodes)")
    print(
        f"the saved checkpoint in `surge enjoy` ({len(eval_returns)} episodes, stochastic actions): "
        f"{np.mean(eval_returns):.2f} ± {np.std(eval_returns) / max(1, len(eval_returns)) ** 0.5:.2f}"
    )
    print(
        "\n| episodes after the stop | resumed: reported mean (window) | uninterrupted: reported mean (window) |"
    )
    print("|---|---|---|")
    for k in REPORT_AFTER:
        if k <= min(len(after), len(whole_after)):
            a, w = after[k - 1], whole_after[k - 1]
            print(f"| {k} | {a[2]:.2f} ({a[3]}) | {w[2]:.2f} ({w[3]}) |")
    n = min(len(after), len(whole_after), 31)
    if n:
        print(
            f"\nmean of the first {n} episodes finished after the stop: resumed "
            f"{np.mean([e[1] for e in after[:n]]):.2f}, uninterrupted {np.mean([e[1] for e in whole_after[:n]]):.2f}"
        )


if __name__ == "__main__":
    main()
