"""Stable-Baselines3's A2C on CartPole-v1 with rl-zoo3's hyper-parameters (`a2c.yml`: 8 envs,
MlpPolicy, ent_coef 0.0; SB3's defaults otherwise: RMSprop lr 7e-4, n_steps 5, max_grad_norm 0.5),
trained to N env steps: does the reference A2C hold a mean return >= 475 over its last 100
episodes from the first time it reaches it (issue 20's A2C criterion)?

Prints the last-100-episode mean every `--every` env steps, then the first step at or above the
bar, the lowest mean after it and the final mean (the same figures as docs/logs/a2c_stability_*.md
takes from surge's progress lines).

    python benchmarks/a2c_sb3_cartpole.py --steps 2000000 --seed 1
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=2_000_000, help="env steps (= env frames on CartPole)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--every", type=int, default=20_000, help="env steps between printed means")
    p.add_argument("--bar", type=float, default=475.0)
    a = p.parse_args()

    import torch
    from stable_baselines3 import A2C
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    curve: list[tuple[int, float]] = []

    class Curve(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next = a.every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next:
                self.next += a.every
                buf = self.model.ep_info_buffer  # the last 100 episodes (stats_window_size)
                mean = float(np.mean([e["r"] for e in buf])) if buf else math.nan
                curve.append((self.num_timesteps, mean))
                print(f"{self.num_timesteps} {mean:.1f}", flush=True)
            return True

    env = make_vec_env("CartPole-v1", n_envs=8, seed=a.seed)
    model = A2C("MlpPolicy", env, ent_coef=0.0, seed=a.seed, verbose=0)
    t0 = time.time()
    model.learn(total_timesteps=a.steps, callback=Curve())
    seconds = time.time() - t0
    first = next((s for s, m in curve if m >= a.bar), None)
    after = [(m, s) for s, m in curve if first is not None and s >= first]
    low = min(after) if after else None
    print(
        f"SB3 A2C CartPole-v1 seed {a.seed}: {a.steps} env steps in {seconds:.0f} s; first >= {a.bar:g}: "
        f"{first if first is not None else 'never'}; lowest after: "
        f"{f'{low[0]:.1f} at {low[1]}' if low else '-'}; final {curve[-1][1]:.1f}"
    )


if __name__ == "__main__":
    main()
