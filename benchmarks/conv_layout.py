"""Conv memory layout: one training step (forward, backward, the learner's Adam) of a benchmark
config's model with its image encoder in channels-last order (surge's) and in plain NCHW order.

    python benchmarks/conv_layout.py --config pong_example --config doom_basic --threads 1 --threads 2

Prints the median milliseconds per minibatch of `batch_size` samples of each layout, alternating
the layouts over `--rounds` rounds so machine noise hits both alike, and their ratio. The process
keeps freed memory as surge's processes do (`retain_freed_memory`), unless `--plain-malloc`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compute_bound import make_train_step  # noqa: E402
from configs import CONFIGS  # noqa: E402

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.envs.registry import make_env  # noqa: E402
from surge.learning.base import make_adam  # noqa: E402
from surge.models import encoders  # noqa: E402
from surge.models.actor_critic import make_actor_critic  # noqa: E402
from surge.runtime.process_setup import retain_freed_memory  # noqa: E402

_CHANNELS_LAST_SCALE = encoders._ImageEncoder._scale


def _nchw_scale(self, obs):
    return _CHANNELS_LAST_SCALE(self, obs).contiguous()


def _step_seconds(cfg, space, action_space, layout: str, steps: int) -> float:
    encoders._ImageEncoder._scale = _CHANNELS_LAST_SCALE if layout == "nhwc" else _nchw_scale
    model = make_actor_critic(cfg, space, action_space)
    if layout == "nchw":
        model = model.to(memory_format=torch.contiguous_format)
    step, _ = make_train_step(cfg, model, make_adam(model, cfg, torch.device("cpu")), space)
    step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", choices=sorted(CONFIGS), help="default: pong_example")
    p.add_argument("--threads", action="append", type=int, help="torch threads (default: 1)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=5, help="timed steps per layout and round")
    p.add_argument("--plain-malloc", action="store_true", help="glibc's default malloc settings")
    args = p.parse_args(argv)
    if not args.plain_malloc:
        retain_freed_memory()
    print("| config | threads | samples | NCHW ms | channels-last ms | NCHW / channels-last |")
    print("|---|---|---|---|---|---|")
    for name in args.config or ["pong_example"]:
        cfg = parse_cfg([*CONFIGS[name].surge_args, "--train_dir=/tmp/surge_conv_layout", "--experiment=c"])
        env = make_env(cfg)
        space, action_space = env.observation_space, env.action_space
        env.close()
        for threads in args.threads or [1]:
            torch.set_num_threads(threads)
            ms: dict[str, list[float]] = {"nchw": [], "nhwc": []}
            for r in range(args.rounds):
                for layout in ("nchw", "nhwc") if r % 2 == 0 else ("nhwc", "nchw"):
                    ms[layout].append(_step_seconds(cfg, space, action_space, layout, args.steps) * 1e3)
            a, b = statistics.median(ms["nchw"]), statistics.median(ms["nhwc"])
            print(f"| {name} | {threads} | {cfg.batch_size} | {a:.1f} | {b:.1f} | {a / b:.2f}x |")
    encoders._ImageEncoder._scale = _CHANNELS_LAST_SCALE
    return 0


if __name__ == "__main__":
    sys.exit(main())
