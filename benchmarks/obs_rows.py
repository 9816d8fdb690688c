"""Writing a split's observations into the trajectory buffers, two ways, per observation size:
each agent's copied straight into its row (`surge.sampling.observations.copy_rows`) against
stacked and then assigned (`stack_obs`, `clean_obs`, one slice assignment), as the rollout worker
chooses by `surge.sampling.obs_writer.ROW_COPY_MIN_BYTES`.

    python benchmarks/obs_rows.py

Prints µs per split step (8 and 64 agents) and rows / stacked.
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np

from surge.sampling.observations import clean_obs, copy_rows, stack_obs

SHAPES = [
    ((4,), np.float32),  # CartPole
    ((17,), np.float64),  # HalfCheetah
    ((256,), np.float32),
    ((1024,), np.float32),
    ((2048,), np.float32),
    ((3, 72, 128), np.uint8),  # doom_benchmark
    ((4, 84, 84), np.uint8),  # pong_1epoch
]


def _per_call(fn, reps: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    for shape, dtype in SHAPES:
        space = gym.spaces.Box(0, 255, shape, dtype=dtype)
        for n in (8, 64):
            buf = np.zeros((n, 5, *shape), dtype=dtype)
            obs = [rng.integers(0, 255, shape).astype(dtype) for _ in range(n)]

            def rows(buf=buf, obs=obs):
                copy_rows(buf[:, 1], obs)

            def stacked(buf=buf, obs=obs, n=n, space=space):
                s, _ = clean_obs(stack_obs(obs, space), n)
                buf[:, 1] = s

            reps = 2000 if n == 8 else 400
            a, b = [], []
            for _ in range(3):  # alternating, medians
                a.append(_per_call(rows, reps))
                b.append(_per_call(stacked, reps))
            a_m, b_m = float(np.median(a)), float(np.median(b))
            size = int(np.prod(shape)) * np.dtype(dtype).itemsize
            print(
                f"{str(shape):14s} {np.dtype(dtype).name:8s} {size:6d} B x{n:3d}: rows {a_m:7.1f} µs, "
                f"stacked {b_m:7.1f} µs, rows / stacked {a_m / b_m:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
