"""Throughput of `--distributed=ray` against the one-machine async placement, same config (CartPole-v1,
the hyper-parameters of tests/learning/test_cartpole.py), runs alternating; plus the inputs of the
cost model of docs/scaling.md: a node's sampling rate (the async placement with --sampler_only, the
same workers as one sampler node), the learner's rate while training, and the per-block transfer
size and times (from the Ray run's "Ray transfers" log line).

The Ray runs use a two-node Ray cluster on this machine (tests/ray_two_nodes.py): the learner on
the head, the sampler node on the second node. Each run is `python -m surge.train` in a subprocess;
throughput is its "Throughput:" line (env frames / s from its first env steps on, so the Ray
actor's start is not counted). Prints a markdown table (docs/benchmarks.md).

    PYTHONPATH=$PWD python benchmarks/ray_throughput.py --frames=100000 --repeats=2
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

# fmt: off
HYPERPARAMS = [
    "--env=CartPole-v1", "--num_workers=2", "--num_envs_per_worker=8", "--seed=3",
    "--encoder_type=mlp", "--encoder_subtype=mlp", "--encoder_mlp_layers", "64", "64", "--use_rnn=False",
    "--recurrence=1", "--with_vtrace=False", "--nonlinearity=tanh", "--batch_size=128",
    "--num_batches_per_iteration=4", "--ppo_epochs=4", "--learning_rate=3e-4", "--max_grad_norm=0.5",
    "--reward_scale=0.1", "--exploration_loss_coeff=0.01", "--num_torch_threads=1",
    "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
]
# fmt: on
THROUGHPUT = re.compile(r"Throughput: (\d+) env frames in ([\d.]+) s = ([\d.]+) env frames/s")
TRANSFERS = re.compile(
    r"Ray transfers: (\d+) shipments, (\d+) blocks, ([\d.]+) MB \(([\d.]+) kB per block\), ([\d.]+) ms per "
    r"shipment fetched, ([\d.]+) ms per block written.*learner: (\d+) iterations, ([\d.]+) s each = (\d+) env "
    r"frames/s while training"
)


def run(name: str, extra: list[str], train_dir: str, frames: int, env: dict[str, str]) -> str:
    cmd = [sys.executable, "-m", "surge.train", *HYPERPARAMS, f"--train_for_env_steps={frames}",
           f"--train_dir={train_dir}", f"--experiment={name}", *extra]  # fmt: skip
    print(" ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (Path(train_dir) / name / "surge_log.txt").read_text()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    from ray_two_nodes import SAMPLER_RESOURCE, TwoNodeCluster

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), "RAY_AUTH_MODE": "disabled"}
    train_dir = tempfile.mkdtemp(prefix="ray_bench_")
    cluster = TwoNodeCluster().start()
    rows: list[tuple[str, float]] = []
    transfers: list[tuple[str, ...]] = []
    try:
        ray_flags = ["--distributed=ray", f"--ray_address={cluster.address}",
                     f"--ray_node_resource={SAMPLER_RESOURCE}"]  # fmt: skip
        for r in range(args.repeats):
            for kind, extra in (("async", []), ("ray", ray_flags)):
                text = run(f"{kind}_{r}", extra, train_dir, args.frames, env)
                fps = float(THROUGHPUT.findall(text)[-1][2])
                rows.append((kind, fps))
                found = TRANSFERS.findall(text)
                if found:
                    transfers.append(found[-1])
        sampler = run("sampler_only", ["--sampler_only=True"], train_dir, args.frames, env)
        node_fps = float(THROUGHPUT.findall(sampler)[-1][2])
    finally:
        cluster.stop()
    print(f"\n{args.frames} env frames per run, CartPole-v1, 2 workers x 8 envs, alternating runs\n")
    print("| placement | env frames/s (each run) | mean |")
    print("|---|---|---|")
    for kind in ("async", "ray"):
        v = [f for k, f in rows if k == kind]
        print(f"| {kind} | {', '.join(f'{x:.0f}' for x in v)} | {sum(v) / len(v):.0f} |")
    print(f"\nnode sampling rate (async, --sampler_only, same workers): {node_fps:.0f} env frames/s")
    for t in transfers:
        print(
            f"ray run: {t[0]} shipments, {t[1]} blocks, {t[3]} kB per block, {t[4]} ms per shipment "
            f"fetched, {t[5]} ms per block written; learner {t[7]} s per iteration = {t[8]} env frames/s "
            "while training"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
