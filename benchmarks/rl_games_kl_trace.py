"""Per-minibatch trace of the KL-adaptive learning-rate rule (`lr_schedule: adaptive`), in rl_games
1.6.5 and in `surge train --cfg=FILE`, to see why one learns faster than the other at equal env
steps (docs/results.md, "rl_games files, side by side").

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 python benchmarks/rl_games_kl_trace.py --budget=163840 --seed=7

Runs surge (serial placement, in this process, so `LearnerBase.adapt_learning_rate` can be
wrapped) and then rl_games (its `Runner`, in a child process, `AdaptiveScheduler.update` wrapped;
the same settings and `ray` stand-in as benchmarks/rl_games_side_by_side.py), each recording for
every minibatch the KL(current ‖ behavior) the rule saw (nats, summed over action dims, mean over
the minibatch) and the learning rate the minibatch's step used. Prints per batch (one rl_games
epoch = one surge iteration): the KL of the batch's first minibatch (measured before any gradient
step on the batch, so it is the drift between the acting and the learning policy: the observation
normaliser's new statistics), the mean KL, the median rate, and the share of minibatches at the
floor `lr_adaptive_min` (1e-6).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def trace_surge(cfg: Path, budget: int, seed: int, out: Path, train_dir: Path) -> None:
    from surge.cli import main
    from surge.learning import base

    orig = base.LearnerBase.adapt_learning_rate
    f = open(out, "w")

    def wrapped(self: base.LearnerBase, kl: float) -> float:
        assert self.kl_lr is not None
        f.write(f"{kl:.6g}\t{self.kl_lr.lr:.6g}\n")
        return orig(self, kl)

    base.LearnerBase.adapt_learning_rate = wrapped  # type: ignore[method-assign]
    flags = [f"--cfg={cfg}", f"--train_for_env_steps={budget}", f"--seed={seed}", "--serial_mode=True"]
    flags += ["--num_torch_threads=1", f"--train_dir={train_dir}", "--experiment=surge_kl_trace"]
    main(["train", *flags, "--restart_behavior=overwrite"])
    f.close()


def trace_rl_games(cfg: Path, budget: int, seed: int, out: Path, train_dir: Path) -> None:
    sys.path.insert(0, str(HERE))
    import rl_games_side_by_side as sbs

    sbs._install_ray_shim()
    from rl_games.common import schedulers

    orig = schedulers.AdaptiveScheduler.update
    f = open(out, "w")

    def wrapped(self, current_lr, entropy_coef, epoch, frames, kl_dist, **kw):  # type: ignore[no-untyped-def]
        f.write(f"{float(kl_dist):.6g}\t{current_lr:.6g}\n")
        return orig(self, current_lr, entropy_coef, epoch, frames, kl_dist, **kw)

    schedulers.AdaptiveScheduler.update = wrapped
    sbs.run_rl_games(cfg, budget, seed, train_dir)
    f.close()


def summary(path: Path, per_batch: int) -> list[str]:
    import numpy as np

    d = np.loadtxt(path, ndmin=2)
    n = len(d) // per_batch
    kl, lr = d[: n * per_batch, 0].reshape(n, per_batch), d[: n * per_batch, 1].reshape(n, per_batch)
    return [
        "first-minibatch KL per batch: " + " ".join(f"{x:.4f}" for x in kl[:, 0]),
        "mean KL per batch:            " + " ".join(f"{x:.4f}" for x in kl.mean(1)),
        "median rate per batch:        " + " ".join(f"{x:.1e}" for x in np.median(lr, 1)),
        f"minibatches at the 1e-6 floor: {float((lr <= 1.01e-6).mean()):.1%} of {lr.size}",
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--cfg", default="", help="rl_games YAML (default: the wheel's configs/mujoco/halfcheetah.yaml)"
    )
    p.add_argument("--budget", type=int, default=163_840, help="env steps per run")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, default=Path("/tmp/rl_games_kl_trace"))
    p.add_argument("--_child", choices=["rl_games", "surge"], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cfg:
        cfg = Path(args.cfg)
    else:
        import rl_games

        cfg = Path(rl_games.__file__).parent / "configs" / "mujoco" / "halfcheetah.yaml"
    args.out.mkdir(parents=True, exist_ok=True)
    if args._child == "rl_games":
        trace_rl_games(cfg, args.budget, args.seed, args.out / "rl_games.tsv", args.out / "rl_games_runs")
        return 0
    if args._child == "surge":
        trace_surge(cfg, args.budget, args.seed, args.out / "surge.tsv", args.out)
        return 0
    cmd = [
        sys.executable,
        __file__,
        f"--cfg={cfg}",
        f"--budget={args.budget}",
        f"--seed={args.seed}",
        f"--out={args.out}",
    ]
    for name in ("surge", "rl_games"):  # one after the other
        with open(args.out / f"{name}.log", "w") as log:
            env = os.environ | {"OMP_NUM_THREADS": "1"}
            rc = subprocess.run(
                [*cmd, f"--_child={name}"], stdout=log, stderr=subprocess.STDOUT, env=env
            ).returncode
        if rc:
            raise SystemExit(f"{name} exited {rc}; see {args.out / (name + '.log')}")
    import yaml

    with open(cfg) as f:
        c = yaml.safe_load(f)["params"]["config"]
    per_batch = c["num_actors"] * c["horizon_length"] // c["minibatch_size"] * c["mini_epochs"]
    print(f"file: {cfg.name}, {args.budget} env steps, seed {args.seed}, {per_batch} minibatches per batch\n")
    for name in ("rl_games", "surge"):
        print(f"{name}:")
        for line in summary(args.out / f"{name}.tsv", per_batch):
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
