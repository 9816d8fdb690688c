"""Does PBT earn its keep? Four CartPole-v1 policies whose starting learning rates span a bad range
(1e-2, 3e-3, 3e-5, 1e-6): one PBT population against four independent runs with the same starting
values, at equal total env frames (the population's budget = 4 x each independent run's).

    python benchmarks/pbt_cartpole.py                      # 3 seeds, 80k frames per population
    python benchmarks/pbt_cartpole.py --seeds 1 --frames 40000 --out /tmp/pbt.md

Each run is `python -m surge.train` in the serial placement (repeatable with --seed). A policy's
final return is the mean return of its last 100 episodes, read from its final checkpoint
(`episode_returns`). The table gives, per seed, the four final returns of each arm and their median;
the PBT arm also lists its replacements from `pbt_log.jsonl` (env frame: policy <- source).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
LRS = (1e-2, 3e-3, 3e-5, 1e-6)
COMMON = [
    "--env=CartPole-v1",
    "--serial_mode=True",
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--rollout=16",
    "--batch_size=256",
    "--use_rnn=False",
    "--save_every_sec=100000",
]
PBT_FLAGS = [
    "--with_pbt=True",
    "--pbt_start_mutation=2000",
    "--pbt_period_env_steps=2000",
]


def _train(train_dir: Path, name: str, args: list[str]) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        *COMMON,
        f"--train_dir={train_dir}",
        f"--experiment={name}",
        *args,
    ]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return train_dir / name


def _final_return(folder: Path, p: int) -> float:
    last = sorted((folder / f"checkpoint_p{p}").glob("checkpoint_*.pth"))[-1]
    returns = torch.load(last, weights_only=True)["episode_returns"]
    return float(sum(returns) / len(returns))


def run_seed(seed: int, frames: int, train_dir: Path) -> dict:
    t0 = time.time()
    hp = {str(p): {"learning_rate": lr} for p, lr in enumerate(LRS)}
    pbt = _train(
        train_dir,
        f"pbt_s{seed}",
        [
            f"--seed={seed}",
            "--num_policies=4",
            f"--train_for_env_steps={frames}",
            "--policy_hyperparams",
            json.dumps(hp),
            *PBT_FLAGS,
        ],
    )
    pbt_returns = [_final_return(pbt, p) for p in range(4)]
    log = [json.loads(x) for x in (pbt / "pbt_log.jsonl").read_text().splitlines()]
    replaced = [(r["env_frames"], r["policy"], r["source"]) for r in log if r["event"] == "replace"]
    final_lrs = [r for r in log if r["event"] != "start"]
    last_lr = json.loads((pbt / "pbt_state.json").read_text())["hyperparams"]
    t1 = time.time()
    solo_returns = []
    for p, lr in enumerate(LRS):
        solo = _train(
            train_dir,
            f"solo_s{seed}_p{p}",
            [f"--seed={seed}", f"--learning_rate={lr}", f"--train_for_env_steps={frames // 4}"],
        )
        solo_returns.append(_final_return(solo, 0))
    return {
        "seed": seed,
        "pbt": pbt_returns,
        "solo": solo_returns,
        "replaced": replaced,
        "updates": len(final_lrs),
        "final_lrs": [h["learning_rate"] for h in last_lr],
        "seconds": (t1 - t0, time.time() - t1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument(
        "--frames", type=int, default=80000, help="env frames of the PBT population (each solo run: 1/4)"
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="pbt_cartpole_") as d:
        for seed in range(1, args.seeds + 1):
            r = run_seed(seed, args.frames, Path(d))
            rows.append(r)
            print(json.dumps(r), flush=True)
    fmt = lambda xs: ", ".join(f"{x:.0f}" for x in xs)  # noqa: E731
    lines = [
        f"Total env frames per arm: {args.frames} (PBT: 4 policies together; independent: {args.frames // 4} each). "
        "Final return: mean of each policy's last 100 episodes.",
        "",
        "| seed | PBT final returns (p0..p3) | PBT median | independent final returns (lr 1e-2, 3e-3, 3e-5, 1e-6) | independent median | PBT replacements (env frame: policy <- source) | PBT final learning rates |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rep = "; ".join(f"{f}: {p} <- {s}" for f, p, s in r["replaced"]) or "none"
        lines.append(
            f"| {r['seed']} | {fmt(r['pbt'])} | **{statistics.median(r['pbt']):.0f}** | {fmt(r['solo'])} | "
            f"**{statistics.median(r['solo']):.0f}** | {rep} | {', '.join(f'{x:.2g}' for x in r['final_lrs'])} |"
        )
    pbt_med = statistics.median(statistics.median(r["pbt"]) for r in rows)
    solo_med = statistics.median(statistics.median(r["solo"]) for r in rows)
    lines += [
        "",
        f"Median over seeds of the per-seed medians: PBT {pbt_med:.0f}, independent {solo_med:.0f}.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
