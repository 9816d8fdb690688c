"""The Atari env stack's CPU per env frame with the ALE env's own observation in RGB (ALE's default),
grayscale and RAM (surge's, `surge.envs.atari.BASE_OBS_TYPE`), rotating in one process: what the
observation ALE makes on every emulator frame, and which AtariPreprocessing never reads, costs.

    python benchmarks/atari_obs_type_ab.py --rounds 3 --steps 2000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402

import surge.app.builtins  # noqa: E402, F401  (registers the env families)
import surge.envs.atari as atari  # noqa: E402
from surge.app.resolve import parse_cfg  # noqa: E402
from surge.cfg import env_frameskip  # noqa: E402
from surge.envs.registry import make_env  # noqa: E402


def cpu_us_per_frame(cfg, obs_type: str, steps: int) -> float:
    """CPU µs of this process per env frame over `steps` random steps of one env."""
    atari.BASE_OBS_TYPE = obs_type
    env = make_env(cfg)
    env.reset(seed=1)
    actions = [env.action_space.sample() for _ in range(64)]
    c0 = time.process_time()
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step_one(actions[i % 64])
        if terminated or truncated:
            env.reset()
    cpu = time.process_time() - c0
    env.close()
    return cpu / steps / env_frameskip(cfg) * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="pong_1epoch", help="an Atari config of configs.py")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=2000)
    a = ap.parse_args(argv)
    cfg = parse_cfg(list(CONFIGS[a.config].surge_args))
    types = ("rgb", "grayscale", "ram")
    res: dict[str, list[float]] = {t: [] for t in types}
    own = atari.BASE_OBS_TYPE
    try:
        for r in range(a.rounds):
            for t in types[r % 3 :] + types[: r % 3]:  # each type first in turn
                res[t].append(cpu_us_per_frame(cfg, t, a.steps))
    finally:
        atari.BASE_OBS_TYPE = own
    for t, v in res.items():
        print(
            f"{t}: "
            + " ".join(f"{x:.1f}" for x in v)
            + f" µs per env frame, median {statistics.median(v):.1f}"
        )
    for t in types[1:]:
        print(f"{t} / rgb: {statistics.median(res[t]) / statistics.median(res['rgb']):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
