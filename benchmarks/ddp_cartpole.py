"""Data-parallel CartPole-v1: `torchrun --standalone --nnodes=1 --nproc_per_node=N -m surge.train`
with the hyper-parameters of tests/learning/test_cartpole.py, then a deterministic evaluation of
rank 0's final checkpoint (10 episodes). Prints the wall time, the mean return and whether it
reached 475 (the issue's Done-when). Result and command in docs/distributed.md.

    PYTHONPATH=$PWD python benchmarks/ddp_cartpole.py --nproc=2 --frames=300000 [--async]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# fmt: off
HYPERPARAMS = [
    "--num_workers=2", "--num_envs_per_worker=8", "--seed=3",
    "--encoder_type=mlp", "--encoder_subtype=mlp", "--encoder_mlp_layers", "64", "64", "--use_rnn=False",
    "--recurrence=1", "--with_vtrace=False", "--nonlinearity=tanh", "--batch_size=128",
    "--num_batches_per_iteration=4", "--ppo_epochs=4", "--learning_rate=3e-4", "--max_grad_norm=0.5",
    "--reward_scale=0.1", "--exploration_loss_coeff=0.01", "--num_torch_threads=1",
]
# fmt: on


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--frames", type=int, default=300_000, help="train_for_env_steps (all ranks together)")
    ap.add_argument("--async", dest="async_", action="store_true", help="async placement (default: serial)")
    ap.add_argument("--train_dir", default="")
    args = ap.parse_args()
    train_dir = args.train_dir or tempfile.mkdtemp(prefix="ddp_cartpole_")
    placement = (
        ["--serial_mode=False", "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False"]
        if args.async_
        else ["--serial_mode=True"]
    )
    common = ["--env=CartPole-v1", "--experiment=cp", f"--train_dir={train_dir}"]
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
        f"--nproc_per_node={args.nproc}", "-m", "surge.train",
        *common, *placement, *HYPERPARAMS, f"--train_for_env_steps={args.frames}",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    print(" ".join(cmd), flush=True)
    t0 = time.time()
    rc = subprocess.run(cmd, env=env).returncode
    seconds = time.time() - t0
    if rc:
        print(f"torchrun failed (exit {rc})")
        return rc
    from surge.app.resolve import parse_cfg
    from surge.enjoy import enjoy

    ev = parse_cfg(
        [*common, "--max_num_episodes=10", "--no_render=True", "--eval_deterministic=True"], evaluation=True
    )
    returns = enjoy(ev)["returns"]
    mean = float(np.mean(returns))
    print(
        f"nproc_per_node={args.nproc} {'async' if args.async_ else 'serial'} frames={args.frames}: "
        f"{seconds:.0f} s wall (torchrun), deterministic mean return {mean:.1f} over {len(returns)} "
        f"episodes -> {'reached' if mean >= 475 else 'did NOT reach'} 475"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
