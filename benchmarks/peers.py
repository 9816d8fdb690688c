"""surge against its peer PPO frameworks on the configs they share: env frames/s, alternating runs.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 python benchmarks/peers.py --rounds 3 --out /tmp/peers

Configs (`--configs`, default both) and what runs on each, in this order every round:

* `cartpole` (CartPole-v1; 1 env frame = 1 env step):
  1. `surge` - `python -m surge.train` with `CONFIGS["cartpole"]` of benchmarks/configs.py (Sample
     Factory's gym example settings, asynchronous APPO), async placement;
  2. `surge_rlg` - surge on rl_games' own `configs/ppo_cartpole.yaml` (`--cfg=FILE`, surge's
     translation of the file, docs/rl_games.md: synchronous PPO) with no placement flag: the
     translation's default, the serial placement (one process, collect then train, as rl_games
     runs it); `surge_rlg_async` - the same with `--serial_mode=False` (rollout workers and
     inference in processes of their own); `surge_rlg_serial` - with `--serial_mode=True`;
  3. `rl_games` - rl_games 1.6.5 on the same file through its own `Runner` (as
     `rl_games_side_by_side.run_rl_games` runs it: device cpu, `torch_threads` 1, `torch_compile`
     False, no checkpoints);
  4. `sb3` - Stable-Baselines3 PPO with the file's settings (the number of envs, horizon, minibatch,
     epochs, MLP, gamma, lambda, learning rate, clip ranges, loss weights, grad norm, reward scale),
     envs in a `SubprocVecEnv` (one process per env), torch threads 1;
  5. `puffer` - PufferLib 3.0.0: not run (see `PUFFER_REASON`); the script prints why.
* `pong` (EnvPool `Pong-v5`, frameskip 4: 1 env step = 4 env frames): the same with
  `CONFIGS["pong_example"]` for `surge` (ALE through gymnasium, Sample Factory's Atari example
  settings), rl_games' `configs/atari/ppo_pong_envpool.yaml` for `surge_rlg` and `rl_games`, and SB3
  with that file's settings on the same EnvPool env (one batched EnvPool env wrapped as SB3's
  `VecEnv`, EnvPool's auto-reset as rl_games uses it; `CnnPolicy` = Nature CNN + 512, ReLU).

Both rl_games files are run with their `score_to_win` raised out of reach (1e12; CartPole's 400 would
stop a run after ~40 s) and no epoch or frame limit: every run is bounded by `--seconds` of wall
time from its process start, after which its process group is killed (`compare_sample_factory._run`).

Throughput of a run = env frames between its first and its last progress report / the seconds
between them (`compare_sample_factory._slope`: start-up and shut-down excluded), where a progress
report is: surge's `Env frames/s ... Total env frames` log line (every 2 s; already in env frames,
frameskip included); rl_games' end of an epoch (its `print_statistics` call, wrapped to print the
time and its `frame`, env steps: x frameskip); SB3's end of a rollout (a callback printing the time
and `num_timesteps`, env steps summed over envs: x frameskip). rl_games and SB3 report once per
collect-then-train cycle; surge's `surge_rlg` (synchronous PPO) is measured between the ends of its
collections where its log shows them (`cycle_slope`: Pong's cycles last about a minute here). The
table gives the median over rounds of each runner and the ratio of surge's median to it:
`surge_rlg / this` (the same hyper-parameters where the frameworks allow) and `surge / this`
(surge's benchmark config).

One round is four runs of `--seconds` each plus ~2 s of clean-up per run: at the defaults (cartpole
60 s, pong 300 s) about 4 minutes for cartpole and 20 minutes for pong.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import (  # noqa: E402
    SURGE_LINE,
    _exit_on_sigterm,
    _median,
    _run,
    _slope,
    _ts,
    run_surge,
)
from configs import CONFIGS, BenchConfig  # noqa: E402
from rl_games_side_by_side import _install_ray_shim, run_rl_games  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNNERS = ["surge", "surge_rlg", "surge_rlg_async", "surge_rlg_serial", "rl_games", "sb3", "puffer"]
SURGE_RUNNERS = ["surge", "surge_rlg", "surge_rlg_async", "surge_rlg_serial"]
PEERS = ["rl_games", "sb3", "puffer"]
#: rl_games' file for each config, relative to the wheel's `rl_games/configs/`
RL_GAMES_FILE = {"cartpole": "ppo_cartpole.yaml", "pong": "atari/ppo_pong_envpool.yaml"}
#: surge's own benchmark config (benchmarks/configs.py) for each config
SURGE_CONFIG = {"cartpole": "cartpole", "pong": "pong_example"}
#: env frames per env step
FRAMESKIP = {"cartpole": 1, "pong": 4}
#: wall-clock seconds of one run when `--seconds` is not given (a Pong epoch of rl_games' file,
#: 8192 steps and 16 minibatches of 2048 on one torch thread, takes about a minute here)
DEFAULT_SECONDS = {"cartpole": 60.0, "pong": 300.0}
PROGRESS = "PEERS_PROGRESS"
PUFFER_REASON = (
    "PufferLib 3.0.0 not run: it did not install here. `pip install pufferlib==3.0.0` (sdist only) "
    "runs setup.py, which downloads raylib-5.5 from github.com at build time (URLError: [Errno -2] "
    "Name or service not known: this machine reaches package registries only); with NO_OCEAN=1 "
    "(no download) and CPU torch 2.13.0 it stops at its torch extension, built as a CUDAExtension "
    "(OSError: CUDA_HOME environment variable is not set), and with NO_OCEAN=1 NO_TRAIN=1 setup.py "
    "raises NameError: name 'c_extension_paths' is not defined."
)


def rl_games_file(config: str) -> Path:
    """The rl_games 1.6.5 wheel's YAML file for `config` ("cartpole" or "pong")."""
    import rl_games

    return Path(rl_games.__file__).parent / "configs" / RL_GAMES_FILE[config]


def unbounded_copy(src: Path, dst: Path) -> Path:
    """Writes `src` (an rl_games YAML file) to `dst` with `config.score_to_win` set to 1e12 (out of
    reach; the rest as shipped) and returns `dst`. Runs are bounded by wall time instead."""
    import yaml

    cfg = yaml.safe_load(src.read_text())
    cfg["params"]["config"]["score_to_win"] = 1e12
    dst.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dst


def _progress(env_steps: int) -> None:
    print(f"{PROGRESS} {time.time():.3f} {env_steps}", flush=True)


def progress_points(console: Path, frameskip: int) -> list[tuple[float, int]]:
    """(unix time, env frames) of the progress lines a child wrote to `console`; their count is in
    env steps, multiplied by `frameskip` into env frames."""
    points = []
    if console.exists():
        for line in console.read_text(errors="replace").splitlines():
            if line.startswith(PROGRESS):
                _, t, steps = line.split()
                points.append((float(t), int(steps) * frameskip))
    return points


def rl_games_child(cfg_path: Path, seed: int, train_dir: Path) -> None:
    """rl_games' own trainer on `cfg_path` until killed (`run_rl_games` with an unreachable budget),
    printing a progress line (time, env steps) at the end of every epoch: rl_games' module-level
    `print_statistics`, which its train loop calls once per epoch with `frame` = env steps so far
    (agent steps summed over the `num_actors` envs), is wrapped."""
    _install_ray_shim()
    from rl_games.common import a2c_common

    original = a2c_common.print_statistics

    def print_statistics(*args: Any) -> None:
        original(*args)
        _progress(int(args[7]))  # (print_stats, curr_frames, ..., epoch, max_epochs, frame, max_frames)

    a2c_common.print_statistics = print_statistics
    run_rl_games(cfg_path, 10**13, seed, train_dir)


def sb3_settings(cfg_path: Path) -> dict[str, Any]:
    """Stable-Baselines3 `PPO` keyword arguments with the rl_games file's hyper-parameters, where SB3
    has them: n_steps = horizon_length, batch_size = minibatch_size, n_epochs = mini_epochs,
    gae_lambda = tau, clip_range = e_clip, clip_range_vf = e_clip if clip_value, vf_coef =
    0.5 x critic_coef (rl_games' loss has 0.5 x critic_coef x the value loss, SB3's vf_coef x it),
    max_grad_norm = grad_norm if truncate_grads. rl_games' adaptive learning rate (Pong's file) has no
    SB3 counterpart: SB3 keeps the file's initial rate."""
    import yaml

    c = yaml.safe_load(cfg_path.read_text())["params"]["config"]
    return dict(
        n_steps=int(c["horizon_length"]),
        batch_size=int(c["minibatch_size"]),
        n_epochs=int(c["mini_epochs"]),
        gamma=float(c["gamma"]),
        gae_lambda=float(c["tau"]),
        learning_rate=float(c["learning_rate"]),
        ent_coef=float(c["entropy_coef"]),
        clip_range=float(c["e_clip"]),
        clip_range_vf=float(c["e_clip"]) if c.get("clip_value", False) else None,
        vf_coef=0.5 * float(c.get("critic_coef", 1)),
        max_grad_norm=float(c["grad_norm"]) if c.get("truncate_grads", False) else 1e30,
        normalize_advantage=bool(c.get("normalize_advantage", True)),
    )


def _envpool_vec_env(task: str, num_envs: int, seed: int) -> Any:
    """One batched EnvPool env of `num_envs` games as an SB3 `VecEnv`. EnvPool resets a finished
    game at its next step (that step's action is ignored), as rl_games uses it; rewards are clipped
    to [-1, 1] as the Pong file's `reward_shaper` does."""
    import envpool
    import numpy as np
    from stable_baselines3.common.vec_env import VecEnv

    class EnvPoolVecEnv(VecEnv):
        render_mode = None

        def __init__(self) -> None:
            self.pool = envpool.make(
                task, env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, seed=seed
            )
            super().__init__(num_envs, self.pool.observation_space, self.pool.action_space)
            self.actions = np.zeros(num_envs, dtype=np.int64)

        def reset(self) -> Any:
            return self.pool.reset()[0]

        def step_async(self, actions: Any) -> None:
            self.actions = np.asarray(actions)

        def step_wait(self) -> Any:
            obs, rew, term, trunc, _ = self.pool.step(self.actions)
            done = term | trunc
            infos: list[dict[str, Any]] = [{} for _ in range(num_envs)]
            for i in np.flatnonzero(done):
                infos[i] = {
                    "terminal_observation": obs[i],
                    "TimeLimit.truncated": bool(trunc[i] and not term[i]),
                }
            return obs, np.clip(rew, -1.0, 1.0).astype(np.float32), done, infos

        def close(self) -> None:
            self.pool.close()

        def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
            return [getattr(self, attr_name)] * num_envs

        def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
            setattr(self, attr_name, value)

        def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
            raise NotImplementedError(method_name)

        def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
            return [False] * num_envs

    return EnvPoolVecEnv()


def sb3_child(config: str, cfg_path: Path, seed: int) -> None:
    """Stable-Baselines3 PPO with the rl_games file's settings (`sb3_settings`) until killed, printing
    a progress line (time, `num_timesteps` = env steps summed over envs) at the end of every
    rollout."""
    import gymnasium as gym
    import torch
    import yaml
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    torch.set_num_threads(1)
    c = yaml.safe_load(cfg_path.read_text())["params"]
    net, cc = c["network"], c["config"]
    kwargs = sb3_settings(cfg_path)
    n = int(cc["num_actors"])
    if config == "cartpole":
        scale = float(cc.get("reward_shaper", {}).get("scale_value", 1.0))

        def scaled(env: gym.Env) -> gym.Env:
            return gym.wrappers.TransformReward(env, lambda r: scale * r)

        env = make_vec_env(
            "CartPole-v1", n_envs=n, seed=seed, vec_env_cls=SubprocVecEnv, wrapper_class=scaled
        )
        act = {"relu": torch.nn.ReLU, "elu": torch.nn.ELU, "tanh": torch.nn.Tanh}[net["mlp"]["activation"]]
        units = list(net["mlp"]["units"])
        arch: Any = dict(pi=units, vf=units) if net.get("separate", False) else units
        policy, policy_kwargs = "MlpPolicy", dict(net_arch=arch, activation_fn=act)
    else:
        env = _envpool_vec_env(cc["env_config"]["env_name"], n, seed)
        policy, policy_kwargs = "CnnPolicy", {}

    class Progress(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            _progress(self.num_timesteps)

    model = PPO(policy, env, policy_kwargs=policy_kwargs, device="cpu", seed=seed, verbose=0, **kwargs)
    model.learn(total_timesteps=10**13, callback=Progress())


def describe(config: str, cfg_path: Path) -> dict[str, str]:
    """What each runner is given on `config`, one line each, for the output."""
    import yaml

    surge_cfg = SURGE_CONFIG[config]
    c = yaml.safe_load(cfg_path.read_text())["params"]
    cc, net = c["config"], c["network"]
    rel = f"rl_games/configs/{RL_GAMES_FILE[config]}"
    if "mlp" in net and "cnn" not in net:
        model = f"MLP {net['mlp']['units']} {net['mlp']['activation']}, separate={net.get('separate', False)}"
    else:
        model = (
            f"conv {len(net['cnn']['convs'])} layers + MLP {net['mlp']['units']} {net['mlp']['activation']}"
        )
    sb3 = sb3_settings(cfg_path)
    envs = (
        f"{cc['num_actors']} CartPole-v1 envs in a SubprocVecEnv, MlpPolicy {model}, reward x{cc.get('reward_shaper', {}).get('scale_value', 1.0)}"
        if config == "cartpole"
        else f"one EnvPool {cc['env_config']['env_name']} of {cc['num_actors']} games as a VecEnv, CnnPolicy (Nature CNN + 512, ReLU; images / 255, no running normalisation), rewards clipped to [-1, 1]"
    )
    return {
        "surge": f"`python -m surge.train` + benchmarks/configs.py `{surge_cfg}` ({' '.join(CONFIGS[surge_cfg].surge_args)}), --serial_mode=False",
        "surge_rlg": f"`python -m surge.train --cfg={rel}` (score_to_win 1e12), --seed=1, no placement flag; surge's translation of the file (docs/rl_games.md)",
        "surge_rlg_async": "the same with --serial_mode=False (rollout workers and inference in processes of their own)",
        "surge_rlg_serial": "the same with --serial_mode=True (one process, collect then train, as rl_games runs the file)",
        "rl_games": f"rl_games 1.6.5 `Runner` on {rel} as shipped ({cc['num_actors']} actors x horizon {cc['horizon_length']}, minibatch {cc['minibatch_size']}, {cc['mini_epochs']} mini-epochs, {model}, lr {cc['learning_rate']} {cc.get('lr_schedule')}) except device cpu, torch_threads 1, torch_compile False, score_to_win 1e12, no epoch/frame limit, seed 1",
        "sb3": f"Stable-Baselines3 PPO, {envs}; "
        + ", ".join(f"{k}={v}" for k, v in sb3.items())
        + ", torch threads 1, seed 1",
        "puffer": PUFFER_REASON,
    }


def run_peer(runner: str, config: str, cfg_path: Path, work: Path, seconds: float) -> float:
    """One run of `runner` ("rl_games" or "sb3") in its own process group, killed after `seconds` of
    wall time: env frames/s between its first and last progress report (nan if fewer than two)."""
    cmd = [sys.executable, __file__, "--_child", runner, config, str(cfg_path), str(work)]
    console = work / f"{runner}_console.txt"
    code = _run(cmd, seconds, ROOT, console, env={**os.environ, "OMP_NUM_THREADS": "1"})
    points = progress_points(console, FRAMESKIP[config])
    if code is not None or len(points) < 2:
        err = Path(f"{console}.err").read_text(errors="replace").splitlines()[-15:]
        print(
            f"  {runner} exited {code} with {len(points)} progress reports:",
            *err,
            sep="\n    ",
            file=sys.stderr,
        )
    return _slope(points)


def run_one(runner: str, config: str, cfg_path: Path, work: Path, seconds: float) -> float:
    """One run of `runner` on `config` for `seconds` of wall time: env frames/s (see the module doc)."""
    if runner in SURGE_RUNNERS:
        if runner == "surge":
            bench = CONFIGS[SURGE_CONFIG[config]]
        else:
            bench = BenchConfig(
                surge_args=[f"--cfg={cfg_path}", "--seed=1"], sf_module="", sf_args=[], frames=0
            )
        placement = {
            "surge": ["--serial_mode=False"],
            "surge_rlg": [],
            "surge_rlg_async": ["--serial_mode=False"],
            "surge_rlg_serial": ["--serial_mode=True"],
        }[runner]
        fps = run_surge(bench, placement, 10**13, work, seconds)[0]
        if runner != "surge":  # synchronous PPO: whole cycles where the log shows them
            fps = cycle_slope(surge_points(work / "surge_console.txt.err"), fps)
        return fps
    return run_peer(runner, config, cfg_path, work, seconds)


def surge_points(log: Path) -> list[tuple[float, int]]:
    """(unix time, env frames) of surge's progress reports in its log (`run_surge`'s parsing)."""
    points = []
    for line in log.read_text(errors="replace").splitlines():
        if m := SURGE_LINE.match(line):
            points.append((_ts(m.group(1)), int(m.group(2))))
    return points


def cycle_slope(points: list[tuple[float, int]], default: float) -> float:
    """Env frames/s between whole collect-then-train cycles of a synchronous run, `default` where
    the log shows fewer than two. surge reports every 2 s, mid-cycle; where a cycle is longer
    than that (Pong's file: 32,768 env frames, then 16 minibatches of training) the frame count
    stands still while the learner trains, and the first report of each such plateau marks the end
    of a collection (within one report interval): the slope is taken between the first and the last
    of those, as rl_games' and SB3's reports are once per cycle. Where cycles are shorter than a
    report interval (CartPole's file) there are no plateaus and `default` (first to last report) is
    within a cycle of it."""
    starts = [
        points[i]
        for i in range(1, len(points) - 1)
        if points[i][1] > points[i - 1][1] and points[i][1] == points[i + 1][1]
    ]
    return _slope(starts) if len(starts) >= 2 else default


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--seconds",
        type=float,
        help=f"wall-clock seconds of every run, start-up included (default per config: {DEFAULT_SECONDS})",
    )
    p.add_argument("--configs", default="cartpole,pong", help="comma-separated, of: cartpole, pong")
    p.add_argument("--peers", default=",".join(PEERS), help=f"comma-separated, of: {', '.join(PEERS)}")
    p.add_argument(
        "--surge",
        default=",".join(SURGE_RUNNERS),
        help=f"surge's runs, comma-separated, of: {', '.join(SURGE_RUNNERS)}",
    )
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "peers", help="run folders")
    p.add_argument("--_child", nargs=4, metavar=("RUNNER", "CONFIG", "CFG", "WORK"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args._child:
        runner, config, cfg, work = args._child
        if runner == "rl_games":
            rl_games_child(Path(cfg), 1, Path(work) / "rl_games_runs")
        else:
            sb3_child(config, Path(cfg), 1)
        return 0
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    configs = [c for c in args.configs.split(",") if c]
    peers = [r for r in args.peers.split(",") if r]
    order = [r for r in RUNNERS if r in args.surge.split(",") + peers]
    bad = [c for c in configs if c not in RL_GAMES_FILE] + [r for r in order if r not in RUNNERS]
    if bad or set(args.surge.split(",")) - set(SURGE_RUNNERS) or set(peers) - set(PEERS):
        p.error(f"unknown config or runner in {args.configs!r} / {args.peers!r} / {args.surge!r}")
    puffer = "puffer" in order
    if puffer:
        print(PUFFER_REASON, flush=True)
        order.remove("puffer")
    args.out.mkdir(parents=True, exist_ok=True)
    tables = []
    for config in configs:
        seconds = args.seconds or DEFAULT_SECONDS[config]
        cfg_path = unbounded_copy(
            rl_games_file(config), args.out / f"{config}_{Path(RL_GAMES_FILE[config]).name}"
        )
        fps: dict[str, list[float]] = {r: [] for r in order}
        for r in range(args.rounds):
            for runner in order:
                work = args.out / f"{config}_round{r + 1}_{runner}"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir(parents=True)
                t0 = time.time()
                fps[runner].append(run_one(runner, config, cfg_path, work, seconds))
                print(
                    f"[{config}] round {r + 1}: {runner}: {fps[runner][-1]:.0f} env frames/s "
                    f"({time.time() - t0:.0f} s)",
                    flush=True,
                )
        tables.append((config, seconds, cfg_path, fps))
    print()
    for config, seconds, cfg_path, fps in tables:
        desc = describe(config, cfg_path)
        med = {r: _median(v) for r, v in fps.items()}
        print(f"### {config}: {args.rounds} rounds of {seconds:.0f} s per run\n")
        for runner in order:
            print(f"- `{runner}`: {desc[runner]}")
        print(
            f"\nenv frames per env step: {FRAMESKIP[config]} (rl_games' `frame` and SB3's `num_timesteps` "
            f"count env steps and are multiplied by it; surge logs env frames)\n"
        )
        print(
            "| runner | env frames/s, median | per round | surge_rlg / this | surge_rlg_async / this | surge / this |"
        )
        print("|---|---|---|---|---|---|")
        for runner in order:
            cells = ", ".join(f"{v:.0f}" for v in fps[runner])
            ratios = [
                f"{med[s] / med[runner]:.2f}x" if s in med and med[s] == med[s] and med[runner] > 0 else "-"
                for s in ("surge_rlg", "surge_rlg_async", "surge")
            ]
            value = f"{med[runner]:.0f}" if med[runner] == med[runner] else "-"
            print(f"| {runner} | {value} | {cells} | {' | '.join(ratios)} |")
        print(f"\n{PUFFER_REASON}\n" if puffer else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
