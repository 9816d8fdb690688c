"""Memory and speed of a frame-based Atari replay of 1,000,000 transitions (issue 20: <= 7.5 GB
resident).

    python benchmarks/replay_memory.py                       # 1M transitions, prioritized, n=3
    python benchmarks/replay_memory.py --transitions 100000  # a quick look

Fills a `PrioritizedReplay` with `frame_stack=4` (one 84x84 uint8 frame stored per step) from
synthetic blocks `[T, columns]` of stacked frames (random pixels: memory does not depend on them),
then prints the process's resident memory (VmRSS of /proc/self/status, before and after), the
buffer's own bytes, and throughput in transitions/s: append, prioritized sample, uniform sample
(a `UniformReplay` over the same ring) and priority updates, each for batches of 32 and 256, per CPU second of this process.
Single-threaded torch (`torch.set_num_threads(1)`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from surge.replay import PrioritizedReplay, UniformReplay


def rss_gb() -> float:
    """Resident memory of this process in GB (1e9 bytes), from /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e9
    raise RuntimeError("no VmRSS in /proc/self/status")


def synthetic_block(rng: np.random.Generator, T: int, n: int, F: int = 4) -> dict[str, torch.Tensor]:
    """A block whose observations are consistent frame stacks of random 84x84 frames."""
    frames = torch.from_numpy(rng.integers(0, 256, (T + F, n, 84, 84), dtype=np.uint8))
    obs = torch.stack([frames[t : t + F].transpose(0, 1) for t in range(T + 1)])  # [T+1, n, F, 84, 84]
    return {
        "obs": obs,
        "actions": torch.from_numpy(rng.integers(0, 6, (T, n))),
        "rewards": torch.from_numpy(rng.choice([-1.0, 0.0, 1.0], (T, n)).astype(np.float32)),
        "terminated": torch.from_numpy(rng.random((T, n)) < 1e-3),
        "truncated": torch.zeros(T, n, dtype=torch.bool),
        "is_active": torch.ones(T, n, dtype=torch.bool),
    }


def rate(fn, items: int, min_seconds: float = 1.0) -> float:
    """items per CPU second of this process (`time.process_time`: single-threaded, so equal to wall
    time on an idle machine, and less disturbed by other processes on a shared one) of calling
    fn() repeatedly for at least min_seconds of CPU time."""
    calls, start = 0, time.process_time()
    while True:
        fn()
        calls += 1
        elapsed = time.process_time() - start
        if elapsed >= min_seconds:
            return calls * items / elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--transitions", type=int, default=1_000_000)
    p.add_argument("--columns", type=int, default=8, help="env-agent columns (envs)")
    p.add_argument("--rollout", type=int, default=128, help="T of an appended block")
    p.add_argument("--n_step", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    N, T = args.columns, args.rollout
    capacity = -(-args.transitions // N) + 1  # rows per column: (capacity - 1) steps + pending row
    before = rss_gb()
    replay = PrioritizedReplay(capacity, N, n_step=args.n_step, gamma=0.99, frame_stack=4)
    blocks = [synthetic_block(rng, T, N) for _ in range(4)]
    cols = torch.arange(N)
    appends = -(-args.transitions // (T * N))
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(appends):
        replay.append(blocks[i % len(blocks)], cols)
    fill_s, fill_cpu = time.perf_counter() - start, time.process_time() - cpu
    after = rss_gb()
    stored = len(replay)
    print(f"transitions stored           {stored:,} ({N} columns x {capacity - 1} steps)")
    print(
        f"buffer bytes (ring.nbytes)   {replay.ring.nbytes() / 1e9:.3f} GB = {replay.ring.nbytes() / stored:.0f} B/transition"
    )
    print(f"sum tree                     {replay.priorities.tree.tree.nbytes / 1e6:.1f} MB")
    print(f"VmRSS before / after fill    {before:.3f} GB / {after:.3f} GB (issue target <= 7.5 GB)")
    print(
        f"append                       {appends * T * N / fill_cpu:,.0f} transitions/CPU-s ({fill_s:.1f} s wall to fill)"
    )
    uniform = UniformReplay(capacity, N, n_step=args.n_step, gamma=0.99, frame_stack=4)
    uniform.ring = replay.ring  # same storage, uniform sampling
    gen = torch.Generator().manual_seed(0)
    for B in (32, 256):
        s = replay.sample(B, gen, env_steps=0)
        td = torch.rand(B)
        print(
            f"prioritized sample B={B:<4}     {rate(lambda B=B: replay.sample(B, gen, env_steps=0), B):,.0f} transitions/CPU-s"
        )
        print(
            f"uniform sample     B={B:<4}     {rate(lambda B=B: uniform.sample(B, gen), B):,.0f} transitions/CPU-s"
        )
        print(
            f"update_priorities  B={B:<4}     {rate(lambda s=s, td=td: replay.update_priorities(s.indices, td), B):,.0f} transitions/CPU-s"
        )
    print(f"VmRSS at the end             {rss_gb():.3f} GB")


if __name__ == "__main__":
    main()
