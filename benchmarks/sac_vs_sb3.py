"""surge SAC against Stable-Baselines3 SAC on MuJoCo HalfCheetah-v5, rounds alternating (issue 20,
item 4): the same hyper-parameters (rl-zoo3's HalfCheetah SAC: lr 3e-4, buffer 1e6, batch 256,
tau 0.005, gamma 0.99, one gradient step per env step, ent_coef auto, learning_starts 10000,
(256, 256) networks), one env, the same env-step budget; each round runs surge then SB3 in fresh
processes and reports env steps/s, updates/s and the return reached (surge: the final checkpoint's
deterministic evaluation by `surge enjoy`; SB3: `evaluate_policy`, deterministic, same episodes).

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/sac_vs_sb3.py --steps 200000 --rounds 3
    taskset -c 0 ... --steps 200000 --seeds 0,1,2 --only=surge & taskset -c 1 ... --only=sb3   # side by side, a core each
    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/sac_vs_sb3.py --steps 12000 --rounds 1   # short version
    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/sac_vs_sb3.py --steps 12000 --rounds 2 \
        --eval_episodes 0 --surge_variant= --surge_variant=--rollout=1   # surge's default against SB3's train_freq 1

The short version measures speed only (12k steps: 10k random, 2k with updates); the return needs
the full budget. Both walls run from building the env and model to the end of training: surge's
`train(cfg)` (envs, model, learner, the final checkpoint and report) and SB3's `SAC(...)` plus
`learn` (before 2026-11-24 SB3's construction, its Adam's first import of torch._dynamo included,
was outside its timer while surge's was inside). Both sides run single-threaded on the CPU (`--num_torch_threads=1`,
`torch.set_num_threads(1)`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from result_line import run_for_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV = "HalfCheetah-v5"
LEARNING_STARTS = 10_000

SURGE = """
import json, sys, time, numpy as np, torch
from surge.app.resolve import parse_cfg
from surge.enjoy import enjoy
from surge.app.training_run import train
steps, seed, tdir, episodes, extra = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5:]
args = ["--env={env}", f"--train_dir={{tdir}}", "--experiment=sac"]
cfg = parse_cfg([*args, "--algo=SAC", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=1",
    "--worker_num_splits=1", "--learning_starts={ls}", f"--train_for_env_steps={{steps}}", f"--seed={{seed}}",
    "--num_torch_threads=1", *extra])
t = time.perf_counter(); assert train(cfg) == "done"; wall = time.perf_counter() - t
ev = parse_cfg([*args, f"--max_num_episodes={{episodes}}", "--no_render", "--eval_deterministic"], evaluation=True)
r = enjoy(ev)["returns"] if episodes else [float("nan")]
print("RESULT", json.dumps({{"wall": wall, "return": float(np.mean(r))}}))
"""

SB3 = """
import json, sys, time, numpy as np, torch, gymnasium as gym
from stable_baselines3 import SAC
from stable_baselines3.common.evaluation import evaluate_policy
torch.set_num_threads(1)
steps, seed, episodes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
t = time.perf_counter()  # from building the env and model on, as surge's train(cfg) is timed
model = SAC("MlpPolicy", gym.make("{env}"), learning_starts={ls}, seed=seed, device="cpu", verbose=0)
model.learn(total_timesteps=steps); wall = time.perf_counter() - t
r = evaluate_policy(model, gym.make("{env}"), n_eval_episodes=episodes, deterministic=True)[0] if episodes else float("nan")
print("RESULT", json.dumps({{"wall": wall, "return": float(r)}}))
"""


def _run(code: str, args: list[str], timeout: float) -> dict[str, float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    r = run_for_result([sys.executable, "-c", code, *args], env, str(ROOT), timeout)
    if "error" in r:
        raise RuntimeError(r["error"])
    return r


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200_000, help="env steps per run")
    p.add_argument("--rounds", type=int, default=3, help="rounds (seeds 0..rounds-1), each surge then SB3")
    p.add_argument("--seeds", default="", help="comma-separated seeds, one round each (overrides --rounds)")
    p.add_argument(
        "--only",
        choices=("surge", "sb3"),
        help="run one side only, e.g. both sides at once on their own cores: "
        "taskset -c 0 ... --only=surge & taskset -c 1 ... --only=sb3",
    )
    p.add_argument("--eval_episodes", type=int, default=10, help="0: speed only")
    p.add_argument("--timeout", type=float, default=36_000.0, help="wall-clock limit of one run, seconds")
    p.add_argument(
        "--surge_variant",
        action="append",
        help="a surge run per round with these extra flags, repeatable; '' = defaults "
        "(e.g. --surge_variant= --surge_variant=--rollout=1); default: one run with defaults",
    )
    a = p.parse_args()
    updates = max(0, a.steps - LEARNING_STARTS)
    seeds = [int(x) for x in a.seeds.split(",")] if a.seeds else list(range(a.rounds))
    for seed in seeds:
        results = []
        for variant in (a.surge_variant or [""]) if a.only != "sb3" else []:
            with tempfile.TemporaryDirectory() as tdir:
                code = SURGE.format(env=ENV, ls=LEARNING_STARTS)
                args = [str(a.steps), str(seed), tdir, str(a.eval_episodes), *variant.split()]
                results.append((f"surge {variant}".strip(), _run(code, args, a.timeout)))
        if a.only != "surge":
            b = _run(
                SB3.format(env=ENV, ls=LEARNING_STARTS),
                [str(a.steps), str(seed), str(a.eval_episodes)],
                a.timeout,
            )
            results.append(("sb3", b))
        for name, r in results:
            print(
                f"round {seed} {name:5s}: {a.steps / r['wall']:8.1f} env steps/s, {updates / r['wall']:8.1f} updates/s, "
                f"wall {r['wall']:7.1f} s, return {r['return']:.1f}",
                flush=True,
            )
    print(time.strftime("%Y-%m-%d %H:%M:%S"))


if __name__ == "__main__":
    main()
