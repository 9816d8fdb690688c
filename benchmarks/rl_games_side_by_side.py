"""rl_games 1.6.5 and `surge train --cfg=FILE` on the same rl_games YAML file, at equal env steps.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 python benchmarks/rl_games_side_by_side.py \
        --budget=200000 --seeds=5 --out=/tmp/sbs > docs/logs/rl_games_side_by_side_DATE.md

For every seed, sequentially (one heavy run at a time): (a) rl_games itself on the file, through
its own `rl_games.torch_runner.Runner` as its `runner.py` does (`Runner().load(yaml)`,
`run({"train": True})`), with `config.device` forced to cpu, `max_frames` and `max_epochs` set to
the budget, `torch_threads` 1 and `torch_compile` False (a speed setting of this rl_games build,
not an algorithmic one); (b) `surge train --cfg=FILE --train_for_env_steps=BUDGET --seed=S`
(with `--serial_mode=True` unless `--surge_async`, `--num_torch_threads=1`). Returns are read from
rl_games' TensorBoard tag `rewards/step` (mean of its last `games_to_track` episodes, raw env
rewards, x = env steps, moved one batch on for a2c_continuous: see `rl_games_step_offset`) and surge's `episode/return_mean` (mean of its last `stats_avg`
episodes, x = env frames, = env steps for a frameskip-1 env). Prints a markdown table: env steps,
mean return over the last ~10% of training (the mean of the logged means whose x lies in the last
10% of the budget), the last logged mean, wall-clock seconds of the whole command (process start,
env creation and the final checkpoint included), env steps/s (budget / wall-clock). Each run's
seconds are kept in `--out`, so `--table_only` prints the table again without training.

Shim: rl_games creates `openai_gym` envs with its `RAY` vec env, which imports `ray` (not
installed here). The script puts a minimal in-process stand-in for the three `ray` calls
rl_games' `RayVecEnv` makes (`ray.remote`, `ray.get`, `ray.init`) in `sys.modules` before rl_games
is imported: the `num_actors` envs are stepped one after the other in the trainer's process, with
rl_games' own `RayWorker` code (so its reset-on-done and float32 casts are unchanged).
rl_games' `RayWorker.seed` only seeds envs that have a `seed` method, which gymnasium 1.x envs do
not: the envs' first resets are unseeded on rl_games' side (its torch/numpy seeds are set).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any


def _install_ray_shim() -> None:
    """A stand-in `ray` module: remote classes are constructed in-process, `.remote` calls run
    at once and `ray.get` returns their results (a list for a list)."""

    class _Ref:
        def __init__(self, value: Any) -> None:
            self.value = value

    class _Method:
        def __init__(self, fn: Any) -> None:
            self.fn = fn

        def remote(self, *a: Any, **k: Any) -> _Ref:
            return _Ref(self.fn(*a, **k))

    class _Handle:
        def __init__(self, obj: Any) -> None:
            self._obj = obj

        def __getattr__(self, name: str) -> _Method:
            return _Method(getattr(self._obj, name))

    class _RemoteClass:
        def __init__(self, cls: type) -> None:
            self.cls = cls

        def remote(self, *a: Any, **k: Any) -> _Handle:
            return _Handle(self.cls(*a, **k))

    def get(refs: Any) -> Any:
        if isinstance(refs, list):
            return [r.value for r in refs]
        return refs.value

    ray = types.ModuleType("ray")
    ray.remote = _RemoteClass  # type: ignore[attr-defined]
    ray.get = get  # type: ignore[attr-defined]
    ray.init = lambda **kwargs: None  # type: ignore[attr-defined]
    ray.is_initialized = lambda: True  # type: ignore[attr-defined]
    sys.modules["ray"] = ray


def run_rl_games(cfg_path: Path, budget: int, seed: int, train_dir: Path) -> None:
    """rl_games' own trainer on the file (called in a child process: `--_rl_games_child`)."""
    _install_ray_shim()
    import yaml
    from rl_games.torch_runner import Runner

    with open(cfg_path) as f:
        cfg = yaml.safe_load(f)
    params = cfg["params"]
    params["seed"] = seed
    params["torch_threads"] = 1
    c = params["config"]
    if "env_config" in c and "seed" in c["env_config"]:
        c["env_config"]["seed"] = seed
    c["device"] = "cpu"
    c["ppo_device"] = "cpu"
    c["torch_compile"] = False
    c["max_frames"] = budget
    c["max_epochs"] = math.ceil(budget / (c["num_actors"] * c["horizon_length"]))
    c["train_dir"] = str(train_dir)
    c["full_experiment_name"] = "rl_games"
    c["save_frequency"] = 0
    runner = Runner()
    runner.load(cfg)
    runner.run({"train": True, "play": False, "checkpoint": None, "sigma": None})


def rl_games_step_offset(cfg_path: Path) -> int:
    """Env steps to add to rl_games' `rewards/step` x value. rl_games 1.6.5's continuous trainer
    (`a2c_common.ContinuousA2CBase.train`) takes `frame = self.frame // num_agents` before adding
    the epoch it has just played, so its summaries lag one batch (`num_actors × horizon_length`)
    behind the env steps taken; the discrete trainer (`DiscreteA2CBase.train`) adds first."""
    import yaml

    with open(cfg_path) as f:
        params = yaml.safe_load(f)["params"]
    if params["algo"]["name"] != "a2c_continuous":
        return 0
    return int(params["config"]["num_actors"]) * int(params["config"]["horizon_length"])


def read_scalars(summary_dir: Path, tag: str) -> list[tuple[int, float]]:
    """(step, value) of `tag` from every event file under `summary_dir`, sorted by step."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    points: dict[int, float] = {}
    for f in sorted(summary_dir.rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(f), size_guidance={"scalars": 0})
        acc.Reload()
        if tag in acc.Tags().get("scalars", []):
            points.update({e.step: e.value for e in acc.Scalars(tag)})
    return sorted(points.items())


def summarise(points: list[tuple[int, float]], budget: int) -> tuple[int, float, float]:
    """(last x, mean of the points in the last 10% of the budget, last value)."""
    if not points:
        return 0, float("nan"), float("nan")
    tail = [v for x, v in points if x >= 0.9 * budget] or [points[-1][1]]
    return points[-1][0], sum(tail) / len(tail), points[-1][1]


def timed(cmd: list[str], log: Path) -> float:
    t0 = time.time()
    with open(log, "w") as f:
        rc = subprocess.run(
            cmd, stdout=f, stderr=subprocess.STDOUT, env=os.environ | {"OMP_NUM_THREADS": "1"}
        ).returncode
    dt = time.time() - t0
    if rc != 0:
        raise SystemExit(f"{cmd} exited {rc}; see {log}")
    return dt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--cfg", default="", help="rl_games YAML (default: the wheel's configs/mujoco/halfcheetah.yaml)"
    )
    p.add_argument("--budget", type=int, default=200_000, help="env steps per run")
    p.add_argument("--seeds", default="5", help="comma-separated")
    p.add_argument("--out", type=Path, default=Path("/tmp/rl_games_side_by_side"))
    p.add_argument("--only", choices=["both", "rl_games", "surge"], default="both")
    p.add_argument(
        "--surge_async", action="store_true", help="surge's async placement instead of --serial_mode"
    )
    p.add_argument(
        "--table_only", action="store_true", help="no runs: the table from the runs already in --out"
    )
    p.add_argument("--_rl_games_child", nargs=3, metavar=("CFG", "BUDGET", "SEED"), help=argparse.SUPPRESS)
    p.add_argument("--_train_dir", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args._rl_games_child:
        cfg, budget, seed = args._rl_games_child
        run_rl_games(Path(cfg), int(budget), int(seed), args._train_dir)
        return 0
    if args.cfg:
        cfg_path = Path(args.cfg)
    else:
        import rl_games

        cfg_path = Path(rl_games.__file__).parent / "configs" / "mujoco" / "halfcheetah.yaml"
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        run_dir = args.out / f"seed{seed}"
        if not args.table_only:
            if run_dir.exists():
                shutil.rmtree(run_dir)
            run_dir.mkdir(parents=True)
        if args.only in ("both", "rl_games"):
            cmd = [sys.executable, __file__, "--_rl_games_child", str(cfg_path), str(args.budget), str(seed)]
            cmd += ["--_train_dir", str(run_dir / "rl_games_runs")]
            if not args.table_only:
                (run_dir / "rl_games.seconds").write_text(f"{timed(cmd, run_dir / 'rl_games.log')}\n")
            dt = float((run_dir / "rl_games.seconds").read_text())
            pts = read_scalars(run_dir / "rl_games_runs" / "rl_games" / "summaries", "rewards/step")
            off = rl_games_step_offset(cfg_path)
            pts = [(x + off, v) for x, v in pts]
            rows.append(("rl_games 1.6.5", seed, dt, *summarise(pts, args.budget), len(pts)))
        if args.only in ("both", "surge"):
            cmd = [sys.executable, "-m", "surge.cli", "train", f"--cfg={cfg_path}"]
            cmd += [f"--train_for_env_steps={args.budget}", f"--seed={seed}", "--num_torch_threads=1"]
            cmd += [f"--train_dir={run_dir}", "--experiment=surge", "--restart_behavior=overwrite"]
            cmd += [] if args.surge_async else ["--serial_mode=True"]
            if not args.table_only:
                (run_dir / "surge.seconds").write_text(f"{timed(cmd, run_dir / 'surge.log')}\n")
            dt = float((run_dir / "surge.seconds").read_text())
            pts = read_scalars(run_dir / "surge" / "summaries", "episode/return_mean")
            name = "surge (async)" if args.surge_async else "surge (serial)"
            rows.append((name, seed, dt, *summarise(pts, args.budget), len(pts)))
    print(
        f"file: `{cfg_path.relative_to(cfg_path.parents[1]) if len(cfg_path.parents) > 1 else cfg_path}`, budget {args.budget} env steps\n"
    )
    print(
        "| trainer | seed | env steps | mean return, last 10% | last logged return (at env steps) | wall-clock s | env steps/s |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, seed, dt, steps, tail, last, _n in rows:
        b = args.budget
        print(f"| {name} | {seed} | {b} | {tail:.1f} | {last:.1f} ({steps}) | {dt:.0f} | {b / dt:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
