"""Torch threads A/B: the same short training run with each `--num_torch_threads` value given,
alternating, optionally with N busy processes started (and stopped) by this script to load the
machine; prints each run's env frames/s (surge's "Throughput" line: from the first env steps to
the end) and, per round, its ratio to the first value's run of that round.

    python benchmarks/threads_ab.py --config cartpole_serial --seconds 40 --rounds 2 --threads torch 1
    python benchmarks/threads_ab.py --config memory_rnn_async --load 6 --threads torch 1
    python benchmarks/threads_ab.py --config pong_example --seconds 60 --threads torch 1

`torch` is torch's own count in a fresh process (one thread per core; `0` keeps it in the learners
and the serial placement's process, surge's default before 2026-11-24); `1` is one thread (the
default since); `1+env` also sets OMP_NUM_THREADS=1 (and MKL's, OpenBLAS's) for every process.
docs/threads.md has the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS as BENCH_CONFIGS  # noqa: E402  (benchmarks/ is not a package)

CONFIGS: dict[str, list[str]] = {
    # the README's CartPole command
    "cartpole_serial": ["--env=cartpole", "--serial_mode=True"],
    # tests/learning/test_memory.py's GRU setting, async placement
    "memory_rnn_async": [
        "--env=memory_cue", "--use_rnn=True", "--serial_mode=False", "--memory_delay=5", "--rollout=7",
        "--recurrence=7", "--num_workers=2", "--num_envs_per_worker=16", "--batch_size=448",
        "--ppo_epochs=2", "--hidden_size=32", "--encoder_mlp_layers", "32",
    ],
    # the same, serial placement
    "memory_rnn_serial": [
        "--env=memory_cue", "--use_rnn=True", "--serial_mode=True", "--memory_delay=5", "--rollout=7",
        "--recurrence=7", "--num_workers=2", "--num_envs_per_worker=16", "--batch_size=448",
        "--ppo_epochs=2", "--hidden_size=32", "--encoder_mlp_layers", "32",
    ],
    # a feed-forward MLP, async placement
    "mlp_async": ["--env=CartPole-v1", "--serial_mode=False"],
    # the README's main job
    "breakout_serial": ["--env=atari_breakout", "--serial_mode=True"],
    # the throughput benchmark's conv-net configs (benchmarks/configs.py), async placement
    **{name: BENCH_CONFIGS[name].surge_args for name in ("pong_example", "pong_1epoch", "doom_basic")},
}  # fmt: skip
THROUGHPUT = re.compile(r"Throughput: \d+ env frames in [\d.]+ s = ([\d.]+) env frames/s")


def torch_default_threads() -> int:
    """torch.get_num_threads() of a fresh process (one per core)."""
    out = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"], capture_output=True, text=True
    )
    return int(out.stdout)


def run_once(args: list[str], threads: str, seconds: float) -> float:
    """One `surge train` run of `seconds` (benchmark mode: nothing saved) with
    `--num_torch_threads=threads`; a value like `1+env` also sets OMP_NUM_THREADS, MKL_NUM_THREADS
    and OPENBLAS_NUM_THREADS to 1 (every OpenMP / BLAS pool of every process, numpy's included).
    Its env frames/s, nan when it printed no rate."""
    if threads.startswith("torch"):
        threads = str(torch_default_threads()) + threads[len("torch") :]
    with tempfile.TemporaryDirectory(prefix="threads_ab_") as tmp:
        cmd = [
            sys.executable, "-m", "surge.cli", "train", *args, f"--num_torch_threads={threads.split('+')[0]}",
            f"--train_for_seconds={seconds}", "--no_writes=True", f"--train_dir={tmp}",
            "--experiment=ab", "--decorrelate_experience_max_seconds=0",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if threads.endswith("+env"):
            env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=seconds + 180)
        m = THROUGHPUT.search(out.stderr + out.stdout)
        if not m:
            print(f"  no throughput line (exit {out.returncode}):\n{out.stderr[-2000:]}", file=sys.stderr)
    return float(m.group(1)) if m else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="cartpole_serial", choices=sorted(CONFIGS))
    p.add_argument(
        "--threads",
        nargs="+",
        default=["torch", "1"],
        help="--num_torch_threads values (torch, N+env: see above)",
    )
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=float, default=40.0, help="--train_for_seconds of each run")
    p.add_argument("--load", type=int, default=0, help="busy processes to start for the measurement")
    a = p.parse_args()
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(a.load)
    ]
    results: dict[str, list[float]] = {t: [] for t in a.threads}
    try:
        time.sleep(2.0 if busy else 0.0)
        for i in range(a.rounds):
            for t in a.threads:
                fps = run_once(CONFIGS[a.config], t, a.seconds)
                results[t].append(fps)
                load = os.getloadavg()[0]
                ratio = fps / results[a.threads[0]][-1]
                print(f"round {i + 1} threads={t}: {fps:.0f} env frames/s ({ratio:.2f}x); load {load:.1f}")
    finally:
        for b in busy:
            os.kill(b.pid, signal.SIGKILL)
            b.wait()
    print(f"\n{a.config}, {a.seconds:.0f} s per run, {a.load} busy processes: env frames/s")
    base = statistics.median(results[a.threads[0]])
    for t in a.threads:
        med = statistics.median(results[t])
        runs = " / ".join(f"{x:.0f}" for x in results[t])
        print(f"--num_torch_threads={t}: {runs}; median {med:.0f} ({med / base:.2f}x)")


if __name__ == "__main__":
    main()
