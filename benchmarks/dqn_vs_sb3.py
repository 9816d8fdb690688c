"""surge DQN vs Stable-Baselines3 DQN on CartPole-v1: same hyper-parameters, same env budget,
rounds alternating (issue 20, item 4).

    python benchmarks/dqn_vs_sb3.py --rounds 3 --budget 50000
    python benchmarks/dqn_vs_sb3.py --rounds 1 --budget 20000 --placement async

Hyper-parameters are rl-zoo3's dqn.yml CartPole-v1 (lr 2.3e-3, batch 64, buffer 100k,
learning_starts 1000, gamma 0.99, target_update_interval 10, exploration_fraction 0.16, final eps
0.04, net 256x256, Huber loss, max grad norm 10) with the experience collected the same way in
both: 8 envs, 32 steps per env between training phases, 128 gradient steps each (SB3:
`n_envs=8, train_freq=32, gradient_steps=128`; surge: `--num_envs_per_worker=8 --rollout=32
--replay_ratio=0.5`; zoo's own train_freq=256 with 1 env is the same 256 env steps and 128 updates
per phase). Both run with one torch thread. Each run is its own process (`--one` runs one),
so start-up costs and warm caches do not leak between them.

Reported per run: env steps/s and updates/s over the run's wall time from the start of training
(surge: `train()`, SB3: `model.learn()`; model and env construction excluded for SB3, surge's
includes its placement's start), the return reached (mean of 10 greedy episodes of the final
policy: surge `surge enjoy --eval_deterministic`, SB3 `evaluate_policy(deterministic=True)`), and
the table gives the median over rounds.
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
from dqn_settings import sb3_kwargs, surge_counters, surge_flags  # noqa: E402
from result_line import print_result, run_for_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

ZOO = dict(
    learning_rate=2.3e-3,
    batch_size=64,
    buffer_size=100_000,
    learning_starts=1000,
    gamma=0.99,
    target_update_interval=10,
    exploration_fraction=0.16,
    exploration_final_eps=0.04,
    net=[256, 256],
    n_envs=8,
    train_freq=32,
    gradient_steps=128,
)


def run_surge(budget: int, seed: int, placement: str) -> dict[str, float]:
    from surge.app.resolve import parse_cfg
    from surge.app.training_run import train
    from surge.enjoy import enjoy

    z = ZOO
    with tempfile.TemporaryDirectory() as tmp:
        args = ["--env=CartPole-v1", "--experiment=dqn", f"--train_dir={tmp}"]
        flags = [
            *surge_flags(z, z["n_envs"]), "--num_workers=1", f"--num_envs_per_worker={z['n_envs']}",
            "--worker_num_splits=1", f"--rollout={z['train_freq']}", f"--recurrence={z['train_freq']}",
            "--num_torch_threads=1", f"--seed={seed}",
            f"--train_for_env_steps={budget}", f"--serial_mode={placement == 'serial'}",
            "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
        ]  # fmt: skip
        cfg = parse_cfg([*args, *flags])
        t0 = time.perf_counter()
        assert train(cfg) == "done"
        wall = time.perf_counter() - t0
        counters = surge_counters(Path(tmp) / "dqn")
        ev = parse_cfg(
            [*args, "--max_num_episodes=10", "--no_render", "--eval_deterministic"], evaluation=True
        )
        ret = statistics.mean(enjoy(ev)["returns"])
    return {"env_steps": counters["env_steps"], "updates": counters["updates"], "wall_s": wall, "return": ret}


def run_sb3(budget: int, seed: int) -> dict[str, float]:
    import torch
    from stable_baselines3 import DQN
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    torch.set_num_threads(1)
    z = ZOO
    env = make_vec_env("CartPole-v1", n_envs=z["n_envs"], seed=seed)
    model = DQN(
        "MlpPolicy",
        env,
        **sb3_kwargs(z),
        seed=seed,
        device="cpu",
    )
    t0 = time.perf_counter()
    model.learn(total_timesteps=budget)
    wall = time.perf_counter() - t0
    mean, _ = evaluate_policy(
        model, make_vec_env("CartPole-v1", n_envs=1, seed=seed + 100), 10, deterministic=True
    )
    return {
        "env_steps": int(model.num_timesteps),
        "updates": int(model._n_updates),
        "wall_s": wall,
        "return": float(mean),
    }


def one(framework: str, budget: int, seed: int, placement: str, timeout: int) -> dict[str, float]:
    """Runs one framework in a fresh process; its result dict (or {"error": ...})."""
    cmd = [sys.executable, __file__, "--one", framework, "--budget", str(budget), "--seed", str(seed),
           "--placement", placement]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return run_for_result(cmd, env, str(ROOT), timeout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=50_000, help="env steps per run")
    ap.add_argument("--seed", type=int, default=1, help="round r uses seed + r")
    ap.add_argument("--placement", choices=("serial", "async"), default="serial", help="surge's placement")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per run")
    ap.add_argument("--one", choices=("surge", "sb3"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        r = run_surge(a.budget, a.seed, a.placement) if a.one == "surge" else run_sb3(a.budget, a.seed)
        print_result(r)
        return 0
    rows: dict[str, list[dict[str, float]]] = {"surge": [], "sb3": []}
    for r in range(a.rounds):
        order = ("surge", "sb3") if r % 2 == 0 else ("sb3", "surge")
        for fw in order:
            res = one(fw, a.budget, a.seed + r, a.placement, a.timeout)
            rows[fw].append(res)
            print(f"round {r} {fw}: {res}", flush=True)
    print(
        "\n| framework | runs | env steps/s | updates/s | return (10 greedy episodes) |\n|---|---|---|---|---|"
    )
    for fw, runs in rows.items():
        ok = [x for x in runs if "error" not in x]
        if not ok:
            print(f"| {fw} | 0 of {len(runs)} | - | - | - |")
            continue
        sps = statistics.median(x["env_steps"] / x["wall_s"] for x in ok)
        ups = statistics.median(x["updates"] / x["wall_s"] for x in ok)
        rets = ", ".join(f"{x['return']:.1f}" for x in ok)
        name = f"surge ({a.placement})" if fw == "surge" else "Stable-Baselines3"
        print(f"| {name} | {len(ok)} of {len(runs)} | {sps:.0f} | {ups:.0f} | {rets} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
