"""A learner's fixed costs: what one APPO `train_batch` costs per batch, per optimizer step and per
sample, so that the price of splitting one batch between several learners can be read off.

It collects batches of the benchmark config with the serial sampler, cuts them to S samples
(whole trajectories of `rollout` steps), and times `train_batch` in CPU seconds of this thread
(`time.thread_time`: steadier than wall time on a shared machine), the median of `--reps` calls:

  S samples in 1 optimizer step    (S = 32, 128, 512: --batch_size=S)
  512 samples in 4 optimizer steps (--batch_size=128)

and fits t = F_batch + k F_step + S b (k steps): b from the one-step times at 128 and 512,
F_step from 512 samples in 4 steps against 1, F_batch from the rest. The P-policy ratio it implies,
for a batch of S samples in k steps per learner: (F + S_1 b) / S_1 over (F + S_P b) / S_P, with
each side's F = F_batch + k F_step.

    python benchmarks/learner_fixed_costs.py                # this checkout
    PYTHONPATH=/tmp/before python benchmarks/learner_fixed_costs.py   # another one
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.data.trajectory import tree_map  # noqa: E402
from surge.runtime.components import build_components  # noqa: E402
from surge.runtime.serial import SerialSampler  # noqa: E402


def _count_ops(learner: Any, b: dict[str, Any]) -> int:
    """aten operations (forward, backward and optimizer) one `train_batch` call dispatches."""
    from torch.utils._python_dispatch import TorchDispatchMode

    count = collections.Counter[str]()

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            count["ops"] += 1
            return func(*args, **(kwargs or {}))

    with _Count():
        learner.train_batch(dict(b))
    return count["ops"]


def collect_batches(c: Any, n: int = 8) -> list[dict[str, Any]]:
    """At least `n` of policy 0's batches (`prepare_batch` output, its slots given back), sampled
    with the serial sampler from the components `c` of a `--serial_mode=True` config."""
    sampler, learner = SerialSampler(c), c.learners[0]
    batches: list[dict[str, Any]] = []
    while len(batches) < n:
        sampler.step()
        while (slots := sampler.take(0)) is not None:
            batches.append(learner.prepare_batch(slots))
            sampler.release(slots, 0)
    return batches


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="cartpole", choices=sorted(CONFIGS))
    p.add_argument("--reps", type=int, default=40, help="timed calls per setting (median)")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    base = [x for x in CONFIGS[a.config].surge_args if not x.startswith("--batch_size=")]
    cfg = parse_cfg(
        [*base, "--serial_mode=True", "--batch_size=512", "--decorrelate_experience_max_seconds=0"]
    )
    c = build_components(cfg)
    learner, T = c.learners[0], cfg.rollout
    batches = collect_batches(c)

    def cut(b: dict[str, Any], samples: int) -> dict[str, Any]:
        return {k: tree_map(lambda x: x[:, : samples // T], v) for k, v in b.items()}

    settings = {(32, 1): 32, (128, 1): 128, (512, 1): 512, (512, 4): 128}  # (samples, steps): batch_size
    times: dict[tuple[int, int], list[float]] = {s: [] for s in settings}
    for (samples, _), bs in settings.items():  # warm-up
        learner.cfg.batch_size = bs
        learner.train_batch(cut(batches[0], samples))
    for i in range(a.reps):  # alternating settings
        for (samples, steps), bs in settings.items():
            learner.cfg.batch_size = bs
            b = cut(batches[i % len(batches)], samples)
            t0 = time.thread_time()
            learner.train_batch(b)
            times[(samples, steps)].append(time.thread_time() - t0)
    ms = {s: statistics.median(v) * 1e3 for s, v in times.items()}
    ops = {}
    for (samples, steps), bs in settings.items():
        learner.cfg.batch_size = bs
        ops[(samples, steps)] = _count_ops(learner, cut(batches[0], samples))
    c.close()
    per_sample = (ms[(512, 1)] - ms[(128, 1)]) / 384
    f_step = (ms[(512, 4)] - ms[(512, 1)]) / 3
    f_batch = ms[(128, 1)] - 128 * per_sample - f_step
    import surge

    print(f"\nsurge from {Path(surge.__file__).parent.parent}")
    print(f"{a.config}, {a.threads} torch thread(s), CPU ms per train_batch (median of {a.reps}):")
    print("| samples | optimizer steps | ms | aten ops |")
    print("|---|---|---|---|")
    for (samples, steps), t in ms.items():
        print(f"| {samples} | {steps} | {t:.2f} | {ops[(samples, steps)]} |")
    print(
        f"\nper sample b = {per_sample * 1e3:.1f} us, per step F_step = {f_step:.2f} ms, per batch F_batch = {f_batch:.2f} ms"
    )
    # the learner benchmark's shapes: one policy's batches are 640 samples (a block of 20
    # trajectories) in 2 steps (512 + 128); a learner of 4 at 128 each gets about 160 (128 + 32)
    one = (f_batch + 2 * f_step + 640 * per_sample) / 640
    four = (f_batch + 2 * f_step + 160 * per_sample) / 160
    print(
        f"implied 4 policies x 128 / 1 policy x 512 (640- and 160-sample batches, 2 steps each): {one / four:.2f}"
    )
    # (F/640 + b) / (F/160 + b) >= 0.9  <=>  F <= 0.1 b / (0.9/160 - 1/640)
    f_max = 0.1 * per_sample / (0.9 / 160 - 1 / 640)
    print(f"fixed cost of a batch in 2 steps: {f_batch + 2 * f_step:.2f} ms; 0.9 needs it <= {f_max:.2f} ms")


if __name__ == "__main__":
    main()
