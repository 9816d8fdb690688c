"""surge DQN ("Rainbow minus noisy nets") against Stable-Baselines3 DQN on an Atari game (issue 20's
Atari item): the same shared hyper-parameters, the same env-frame budget, rounds alternating.

Shared hyper-parameters are rl-zoo3's `dqn.yml` Atari set: Nature CNN on 4 stacked 84x84 grey
frames, lr 1e-4, batch 32, buffer 100k, learning_starts 100k steps, target_update_interval 1000
steps, train_freq 4 / gradient_steps 1 (0.25 updates per env step), exploration_fraction 0.1 to
exploration_final_eps 0.01, Huber loss, max grad norm 10, the standard preprocessing (no-op reset,
frameskip 4 with max-pool, episodic life, reward sign; both frameworks use the same gymnasium
`...NoFrameskip-v4` ids and wrappers). surge adds the Rainbow parts the issue names (`--rainbow`,
on by default): double Q, dueling head, 3-step returns and prioritized replay (C51 is left out
unless `--categorical`, since its loss is not SB3's).

    # both sides at once, a core each, three seeds each (2M frames = 500k env steps):
    taskset -c 0 python benchmarks/dqn_atari_vs_sb3.py --frames 2000000 --seeds 1,2,3 --only surge &
    taskset -c 1 python benchmarks/dqn_atari_vs_sb3.py --frames 2000000 --seeds 1,2,3 --only sb3
    # speed only, short (learning starts early so most of the run trains):
    python benchmarks/dqn_atari_vs_sb3.py --frames 80000 --learning_starts 2000 --seeds 1 --eval_episodes 0

Reported per run: env frames/s (4 per env step) and updates/s over the whole run, from building
the env and model to the end of training; SB3's share of that wall spent in `model.train` (its
gradient updates), which says how far any framework can go at the same number of updates; and the
return of `--eval_episodes` whole games (all lives, unclipped) of the final greedy policy (surge:
`surge enjoy --eval_deterministic`; SB3: `evaluate_policy(deterministic=True)` on the Monitor-
wrapped env, which reports whole-game scores), and each game's score and length in env steps (a
greedy policy can loop until the time limit, 27,000 env steps). `--keep_dir DIR` keeps both
trained policies, to be played again. Each run also prints its training curve: the mean
training return of the last 100 whole games (surge: TensorBoard's `episode/return_mean`; SB3: its
Monitor's `ep_info_buffer`) every `--curve_every` env frames.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import _pythonpath  # noqa: E402
from dqn_settings import sb3_kwargs, surge_counters, surge_flags  # noqa: E402
from result_line import print_result, run_for_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

ZOO = dict(
    learning_rate=1e-4,
    batch_size=32,
    buffer_size=100_000,
    learning_starts=100_000,
    target_update_interval=1000,
    train_freq=4,
    gradient_steps=1,
    exploration_fraction=0.1,
    exploration_final_eps=0.01,
    max_grad_norm=10.0,
)
RAINBOW = ["--double_dqn=True", "--dueling=True", "--n_step_return=3", "--prioritized_replay=True"]


def _camel(game: str) -> str:
    return "".join(w.capitalize() for w in game.split("_"))


def run_surge(a: argparse.Namespace) -> dict[str, float]:
    from surge.app.resolve import parse_cfg
    from surge.app.training_run import train
    from surge.enjoy import enjoy

    z = {**ZOO, "learning_starts": a.learning_starts}
    with tempfile.TemporaryDirectory() as scratch:
        # --keep_dir: the experiment stays, to be played again (`surge enjoy --train_dir=...`)
        tmp = str(Path(a.keep_dir) / f"surge_seed{a.seed}") if a.keep_dir else scratch
        args = [f"--env=atari_{a.game}", "--experiment=dqn", f"--train_dir={tmp}"]
        flags = [
            *surge_flags(z, 1), f"--num_workers={a.surge_workers}", f"--num_envs_per_worker={a.surge_envs}",
            "--worker_num_splits=1", f"--num_torch_threads={a.threads}", f"--seed={a.seed}", f"--train_for_env_steps={a.frames}",
            f"--serial_mode={a.placement == 'serial'}", "--decorrelate_experience_max_seconds=0",
            *(RAINBOW if a.rainbow else []), *(["--categorical=True"] if a.categorical else []),
            f"--device={a.device}", *a.surge_flags.split(),
        ]  # fmt: skip
        cfg = parse_cfg([*args, *flags])
        t0 = time.perf_counter()
        assert train(cfg) == "done"
        wall = time.perf_counter() - t0
        counters = surge_counters(Path(tmp) / "dqn")
        curve = _surge_curve(Path(tmp) / "dqn" / "summaries", a.curve_every)
        games: dict[str, list[float]] = {"returns": [], "lengths": []}
        if a.eval_episodes:
            ev = parse_cfg(
                [*args, f"--max_num_episodes={a.eval_episodes}", "--no_render", "--eval_deterministic"],
                evaluation=True,
            )
            played = enjoy(ev)
            games = {
                "returns": [float(r) for r in played["returns"]],
                "lengths": [int(n) for n in played["lengths"]],
            }
    ret = statistics.mean(games["returns"]) if games["returns"] else float("nan")
    return {**counters, "wall_s": wall, "return": ret, "curve": curve, "eval_games": games}


def _surge_curve(summaries: Path, every: int) -> list[tuple[int, float]]:
    """(env frame, training return of the last 100 games) at the first logged point past each
    multiple of `every` env frames, read from the run's TensorBoard events."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    points: list[tuple[int, float]] = []
    for folder in sorted(p for p in summaries.iterdir() if p.is_dir()):
        acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})
        acc.Reload()
        if "episode/return_mean" in acc.Tags()["scalars"]:
            points += [(int(e.step), float(e.value)) for e in acc.Scalars("episode/return_mean")]
    out, mark = [], every
    for step, value in sorted(points):
        if step >= mark:
            out.append((step, round(value, 2)))
            mark = (step // every + 1) * every
    return out


def run_sb3(a: argparse.Namespace) -> dict[str, float]:
    import ale_py
    import gymnasium as gym
    import torch
    from stable_baselines3 import DQN
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecFrameStack

    gym.register_envs(ale_py)
    torch.set_num_threads(a.threads)
    z = {**ZOO, "learning_starts": a.learning_starts}
    env_id = f"{_camel(a.game)}NoFrameskip-v4"
    t0 = time.perf_counter()  # from building the env and model on, as surge's train(cfg) is timed
    env = VecFrameStack(make_atari_env(env_id, n_envs=1, seed=a.seed), n_stack=4)
    model = DQN(
        "CnnPolicy",
        env,
        **sb3_kwargs(z),
        optimize_memory_usage=False,
        seed=a.seed,
        device="cuda" if a.device == "gpu" else a.device,
    )
    train_s = 0.0
    inner = model.train

    def timed_train(*args: object, **kwargs: object) -> None:
        nonlocal train_s
        t = time.perf_counter()
        inner(*args, **kwargs)
        train_s += time.perf_counter() - t

    model.train = timed_train  # type: ignore[method-assign]
    curve: list[tuple[int, float]] = []

    class Curve(BaseCallback):
        """Records the mean training return of the last 100 whole games every `--curve_every` frames."""

        def _on_step(self) -> bool:
            frames = 4 * self.model.num_timesteps
            if frames >= (len(curve) + 1) * a.curve_every and self.model.ep_info_buffer:
                curve.append((frames, round(statistics.mean(e["r"] for e in self.model.ep_info_buffer), 2)))
            return True

    model.learn(total_timesteps=a.frames // 4, callback=Curve())
    wall = time.perf_counter() - t0
    games: dict[str, list[float]] = {"returns": [], "lengths": []}
    if a.eval_episodes:
        ev = VecFrameStack(make_atari_env(env_id, n_envs=1, seed=a.seed + 100), n_stack=4)
        rs, ns = evaluate_policy(model, ev, a.eval_episodes, deterministic=True, return_episode_rewards=True)
        games = {"returns": [float(r) for r in rs], "lengths": [int(n) for n in ns]}
    if a.keep_dir:
        del model.train  # the timing wrapper (an instance attribute) does not pickle
        model.save(Path(a.keep_dir) / f"sb3_dqn_seed{a.seed}")
    ret = statistics.mean(games["returns"]) if games["returns"] else float("nan")
    return {
        "env_frames": 4 * int(model.num_timesteps),
        "env_steps": int(model.num_timesteps),
        "updates": int(model._n_updates),
        "wall_s": wall,
        "train_share": train_s / wall,
        "return": ret,
        "curve": curve,
        "eval_games": games,
    }


def one(framework: str, a: argparse.Namespace, seed: int) -> dict[str, float]:
    """Runs one framework in a fresh process; its result dict (or {"error": ...})."""
    cmd = [sys.executable, __file__, "--one", framework, "--seed", str(seed)]
    cmd += [f"--{k}={v}" for k, v in vars(a).items() if k not in ("one", "only", "seed", "seeds")]
    env = {**os.environ, "PYTHONPATH": _pythonpath(ROOT), "OMP_NUM_THREADS": str(a.threads)}
    return run_for_result(cmd, env, str(ROOT), a.timeout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--game", default="breakout", help="ALE game in snake_case (surge: atari_<game>)")
    ap.add_argument("--frames", type=int, default=2_000_000, help="env frames per run (4 per env step)")
    ap.add_argument("--learning_starts", type=int, default=ZOO["learning_starts"], help="env steps")
    ap.add_argument("--seeds", default="1", help="comma-separated; a round each")
    ap.add_argument("--only", choices=("surge", "sb3"), help="run one side only")
    ap.add_argument("--eval_episodes", type=int, default=10, help="whole games; 0: speed only")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of each side")
    ap.add_argument("--placement", choices=("serial", "async"), default="async", help="surge's placement")
    ap.add_argument("--surge_workers", type=int, default=1)
    ap.add_argument("--surge_envs", type=int, default=4, help="envs per surge rollout worker")
    ap.add_argument("--rainbow", type=int, default=1, help="1: double, dueling, 3-step, prioritized")
    ap.add_argument("--categorical", type=int, default=0, help="1: add C51")
    ap.add_argument("--surge_flags", default="", help="more surge flags, space-separated")
    ap.add_argument(
        "--device", default="cpu", choices=("cpu", "gpu"), help="both sides' learner and acting device"
    )
    ap.add_argument(
        "--curve_every", type=int, default=200_000, help="env frames between training-curve points"
    )
    ap.add_argument("--timeout", type=int, default=36_000, help="seconds per run")
    ap.add_argument(
        "--keep_dir",
        default="",
        help="keep each seed's surge experiment (DIR/surge_seedN/dqn) and SB3 model (DIR/sb3_dqn_seedN.zip)",
    )
    ap.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--one", choices=("surge", "sb3"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.keep_dir and not a.one:  # surge would resume a kept experiment instead of training anew
        kept = [p for s in a.seeds.split(",") if (p := Path(a.keep_dir) / f"surge_seed{int(s)}").exists()]
        if kept:
            ap.error(f"--keep_dir: {kept[0]} exists (a kept run); remove it or choose another --keep_dir")
    if a.one:
        r = run_surge(a) if a.one == "surge" else run_sb3(a)
        print_result(r)
        return 0
    sides = (a.only,) if a.only else ("surge", "sb3")
    for i, seed in enumerate(int(s) for s in a.seeds.split(",")):
        for fw in sides if i % 2 == 0 else sides[::-1]:
            r = one(fw, a, seed)
            if "error" in r:
                print(f"seed {seed} {fw}: {r}", flush=True)
                continue
            share = f", {100 * r['train_share']:.0f}% in train()" if "train_share" in r else ""
            print(
                f"seed {seed} {fw:5s}: {r['env_frames'] / r['wall_s']:7.1f} env frames/s, "
                f"{r['updates'] / r['wall_s']:6.2f} updates/s ({r['updates']} updates), wall {r['wall_s']:7.1f} s"
                f"{share}, return {r['return']:.1f}",
                flush=True,
            )
            print(f"seed {seed} {fw:5s} curve (env frames, training return): {r.get('curve')}", flush=True)
            games = r.get("eval_games") or {}
            print(
                f"seed {seed} {fw:5s} greedy games (return, env steps): "
                f"{list(zip(games.get('returns', []), games.get('lengths', []), strict=True))}",
                flush=True,
            )
    print(time.strftime("%Y-%m-%d %H:%M:%S"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
