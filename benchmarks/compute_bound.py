"""The compute bound of a benchmark config: what 2 cores could do if every core-second went into
the env, one inference pass and `ppo_epochs` training passes per agent step, and nothing else.

    python benchmarks/compute_bound.py --config pong_example

For each config it measures, on one core (torch with 1 thread, env in this process):
  env      core-seconds per env step of the env alone (random actions, standard preprocessing),
  infer    core-seconds per sample of one forward pass at the inference batch size,
  train    core-seconds per sample of `ppo_epochs` passes (forward, backward, the learner's Adam) at
           batch_size,
and prints `bound = cores / (env + infer + train)` in env frames/s (× frameskip). The process keeps
freed memory as surge's processes do (`retain_freed_memory`), unless `--plain-malloc`.

On this shared machine one measurement of a conv config varies by up to ±15%, so each component is
measured `--repeats` times (default 3) and the bound uses the median of each; the last column gives
the lowest and highest bound of the single repeats.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.cfg.config import env_frameskip, flag_value  # noqa: E402
from surge.envs.registry import make_env  # noqa: E402
from surge.learning.base import make_adam  # noqa: E402
from surge.models.actor_critic import make_actor_critic  # noqa: E402
from surge.runtime.process_setup import retain_freed_memory  # noqa: E402


def _time(fn, min_seconds: float = 2.0) -> float:
    """Seconds per call of `fn`, after one warm-up call."""
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_seconds:
        fn()
        n += 1
    return (time.perf_counter() - t0) / n


def env_seconds_per_step(cfg) -> float:
    """Core-seconds per env step (per sub-env step for batched envs) with random actions."""
    env = make_env(cfg)
    env.reset(seed=0)
    n = env.num_agents
    batched = getattr(env, "is_batched", False)
    space = env.action_space

    def step():
        acts = [space.sample() for _ in range(n)]
        env.step(np.stack(acts) if batched else acts)

    per_call = _time(step)
    env.close()
    return per_call / (n if batched else 1)


def _sample_obs(space, n: int) -> torch.Tensor:
    """`n` random observations of `space`, stacked `[n, *shape]` in its dtype."""
    return torch.as_tensor(np.stack([space.sample() for _ in range(n)]))


def model_seconds(cfg, env_info) -> tuple[float, float]:
    """Core-seconds per sample of inference (batch = agents of one split) and of training."""
    obs_space, action_space, n_agents = env_info
    model = make_actor_critic(cfg, obs_space, action_space)
    opt = make_adam(model, cfg, torch.device("cpu"))  # the learner's own optimizer
    per_split = max(1, cfg.num_envs_per_worker // cfg.worker_num_splits) * n_agents
    infer_batch = per_split * (cfg.num_workers if cfg.serial_mode else 1)
    obs = _sample_obs(obs_space, infer_batch)
    h = torch.zeros(infer_batch, model.rnn_state_size)
    t_inf = _time(lambda: model.act(obs, h)) / infer_batch
    train_step, samples = make_train_step(cfg, model, opt, obs_space)
    t_train = _time(train_step) / samples * cfg.ppo_epochs
    return t_inf, t_train


def make_train_step(cfg, model, opt, obs_space) -> tuple[Callable[[], None], int]:
    """One training step on a random minibatch of `batch_size` samples (`[T, B, *obs_shape]`, T =
    rollout with V-trace, else recurrence): forward over the sequence, a stand-in loss, backward,
    `opt.step()`. Returns the step and its number of samples T x B."""
    T = cfg.recurrence if not flag_value(cfg, "with_vtrace", False) else cfg.rollout
    B = max(1, cfg.batch_size // T)
    tobs = _sample_obs(obs_space, T * B).reshape(T, B, *obs_space.shape)
    states = torch.zeros(T, B, model.rnn_state_size)
    dones = torch.zeros(T, B)

    def train_step() -> None:
        logits, values = model.evaluate(tobs, states, dones, T)
        loss = logits.pow(2).mean() + values.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    return train_step, T * B


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", help="config name (default: all)", choices=sorted(CONFIGS))
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--plain-malloc", action="store_true", help="glibc's default malloc settings")
    p.add_argument("--repeats", type=int, default=3, help="measurements per component; the median is used")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error(f"--repeats must be at least 1 (got {args.repeats})")
    if not args.plain_malloc:
        retain_freed_memory()
    torch.set_num_threads(1)
    print(
        f"| config | env ms/step | infer ms/sample | train ms/sample | bound env frames/s ({args.cores} cores) "
        "| range of single repeats |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.config or sorted(CONFIGS):
        c = CONFIGS[name]
        cfg = parse_cfg([*c.surge_args, "--train_dir=/tmp/surge_compute_bound", "--experiment=cb"])
        env = make_env(cfg)
        info = (env.observation_space, env.action_space, env.num_agents)
        env.close()
        frames_per_core_second = args.cores * env_frameskip(cfg)
        times = np.array(
            [(env_seconds_per_step(cfg), *model_seconds(cfg, info)) for _ in range(args.repeats)]
        )
        t_env, t_inf, t_train = np.median(times, axis=0)
        bound = frames_per_core_second / (t_env + t_inf + t_train)
        single = frames_per_core_second / times.sum(axis=1)
        print(
            f"| {name} | {t_env * 1e3:.3f} | {t_inf * 1e3:.3f} | {t_train * 1e3:.3f} | {bound:.0f} "
            f"| {single.min():.0f}-{single.max():.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
