"""doom_benchmark's env stack alone, as a rollout worker makes it (`make_env` on the benchmark
config's flags), stepped with random actions in this process: wall and CPU µs per env step and CPU
µs per env frame of this process (ViZDoom's engine runs in a process of its own, not counted).

    python benchmarks/doom_env_step.py --steps 3000
    py-spy record --native -r 1000 -f raw -o doom.raw -- python benchmarks/doom_env_step.py

What the rollout workers pay per frame for the env itself, beside surge's own loop
(`role_ceilings.py --role rollout` gives both inside the loop).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402

import surge.app.builtins  # noqa: E402, F401  (registers the env families)
from surge.app.resolve import parse_cfg  # noqa: E402
from surge.cfg import env_frameskip  # noqa: E402
from surge.envs.registry import make_env  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=3000, help="env steps timed (frameskip frames each)")
    ap.add_argument("--config", default="doom_benchmark", help="a benchmark config of configs.py")
    a = ap.parse_args(argv)
    cfg = parse_cfg(list(CONFIGS[a.config].surge_args))
    env = make_env(cfg)  # one agent's env behind the multi-agent face the rollout workers step
    env.reset(seed=1)
    actions = [env.action_space.sample() for _ in range(256)]
    frameskip = env_frameskip(cfg)
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(a.steps):
        _, _, terminated, truncated, _ = env.step_one(actions[i % 256])
        if terminated or truncated:
            env.reset()
    wall, cpu = (time.perf_counter() - t0) / a.steps, (time.process_time() - c0) / a.steps
    print(
        f"{a.config}: {a.steps} steps, wall {wall * 1e6:.1f} µs/step, CPU {cpu * 1e6:.1f} µs/step "
        f"({cpu / frameskip * 1e6:.2f} µs per env frame at frameskip {frameskip})"
    )
    env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
