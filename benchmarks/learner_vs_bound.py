"""The learner's `train_batch` against the compute bound's training step, and where the difference
goes: the learner's share of a config's gap to its bound (`compute_bound.py`).

    python benchmarks/learner_vs_bound.py --config cartpole --reps 150
    PYTHONPATH=/tmp/before python benchmarks/learner_vs_bound.py   # another checkout

It collects batches of the benchmark config with the serial sampler, then alternates, `--reps`
times, one `train_batch` on a copy of a batch with one call of the bound's training step
(`compute_bound.make_train_step`: forward, a stand-in loss, backward, the learner's own Adam) on a
copy of the same model, both on one torch thread, with freed memory kept as the learner process
keeps it (`retain_freed_memory`). Times are CPU seconds of this thread (`time.thread_time`):
medians per call, and the mean per batch of each learner part (the time spent inside that method
or function, its callees included; parts nest, e.g. `_gae_targets` inside `_gae_units`).
"""

from __future__ import annotations

import argparse
import collections
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compute_bound  # noqa: E402
from configs import CONFIGS  # noqa: E402
from learner_fixed_costs import collect_batches  # noqa: E402

import surge.algorithms.appo.learner as learner_module  # noqa: E402
from surge.app.resolve import parse_cfg  # noqa: E402
from surge.learning.base import make_adam  # noqa: E402
from surge.runtime.components import build_components  # noqa: E402
from surge.runtime.process_setup import retain_freed_memory  # noqa: E402

#: the learner's methods timed as parts (those it has), then functions of `surge.algorithms.appo.learner`
METHODS = ("_mask_stale", "_update_obs_normalizer", "_gae_units", "_gae_targets", "_step", "apply_gradients")
FUNCTIONS = ("ppo_loss", "mean_stats")


def _timed(fn: Callable[..., Any], key: str, acc: dict[str, float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[key] += time.thread_time() - t0

    return wrapper


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Runs the comparison and prints it; returns the medians (`train_batch`, `bound_step`, ms) and
    each part's mean (ms per batch)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="cartpole", choices=sorted(CONFIGS))
    p.add_argument("--reps", type=int, default=150, help="alternating calls of each (medians)")
    p.add_argument("--warmup", type=int, default=5, help="untimed alternating calls first")
    a = p.parse_args(argv)
    retain_freed_memory()
    torch.set_num_threads(1)
    cfg = parse_cfg(
        [*CONFIGS[a.config].surge_args, "--serial_mode=True", "--decorrelate_experience_max_seconds=0"]
    )
    c = build_components(cfg)
    learner = c.learners[0]
    batches = collect_batches(c)
    bound_model = copy.deepcopy(learner.model)
    bound_step, samples = compute_bound.make_train_step(
        cfg, bound_model, make_adam(bound_model, cfg, torch.device("cpu")), c.info.observation_space
    )
    acc: dict[str, float] = collections.defaultdict(float)
    for name in METHODS:
        if hasattr(learner, name):
            setattr(learner, name, _timed(getattr(learner, name), name, acc))
    saved = {name: getattr(learner_module, name) for name in FUNCTIONS}
    for name, fn in saved.items():
        setattr(learner_module, name, _timed(fn, name, acc))
    ours: list[float] = []
    bound: list[float] = []
    try:
        for i in range(a.warmup + a.reps):
            if i == a.warmup:
                acc.clear()
            b = {k: (v.clone() if torch.is_tensor(v) else v) for k, v in batches[i % len(batches)].items()}
            t0 = time.thread_time()
            learner.train_batch(b)
            t1 = time.thread_time()
            bound_step()
            t2 = time.thread_time()
            if i >= a.warmup:
                ours.append(t1 - t0)
                bound.append(t2 - t1)
    finally:
        for name, fn in saved.items():
            setattr(learner_module, name, fn)
        c.close()
    out = {"train_batch": statistics.median(ours) * 1e3, "bound_step": statistics.median(bound) * 1e3}
    parts = {k: v / a.reps * 1e3 for k, v in sorted(acc.items(), key=lambda kv: -kv[1])}
    import surge

    print(f"surge from {Path(surge.__file__).parent.parent}")
    print(
        f"{a.config}: {samples}-sample batch, CPU ms per call (median of {a.reps} alternating): "
        f"train_batch {out['train_batch']:.2f}, the bound's step {out['bound_step']:.2f}, "
        f"difference {out['train_batch'] - out['bound_step']:.2f}"
    )
    print("| learner part | ms per batch (mean) |")
    print("|---|---|")
    for k, v in parts.items():
        print(f"| {k} | {v:.3f} |")
    return {**out, **parts}


if __name__ == "__main__":
    main()
