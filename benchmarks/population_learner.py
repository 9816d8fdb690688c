"""The learners' cost per own sample: one policy against a population on the random mapping, on the
same experience path, in one process (no sampling or inference in the timing).

For each setting it collects each learner's batches with the serial sampler (CartPole-v1 by default,
a benchmark config's model and flags), copies them out, then times `train_batch` on them: "own
samples/s" is the number of agent steps the learners train on that their own policy acted on,
divided by the seconds spent training, summed over the learners. Settings, alternating over rounds:

  1 policy            --batch_size=B
  P policies, B/P     --batch_size=B/P each: the same total batch per iteration
  P policies, B       --batch_size=B each: the same batch per learner

Run it on several checkouts (e.g. before and after routing by trajectory, where a learner got every
block its policy acted in and masked the other policies' steps):

    python benchmarks/population_learner.py --config cartpole .
    PYTHONPATH=/tmp/main_checkout python benchmarks/population_learner.py --config cartpole
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.runtime.components import build_components  # noqa: E402
from surge.runtime.serial import SerialSampler  # noqa: E402


def _arg(args: list[str], name: str) -> str:
    return [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")][-1]


def measure(base: list[str], policies: int, batch: int, batches_per_learner: int) -> float:
    """Own samples per second of training, summed over the learners."""
    cfg = parse_cfg(
        [
            *base,
            "--serial_mode=True",
            f"--num_policies={policies}",
            "--policy_mapping=random",
            f"--batch_size={batch}",
            "--decorrelate_experience_max_seconds=0",
        ]
    )
    c = build_components(cfg)
    sampler = SerialSampler(c)
    buf = c.buffers
    got: dict[int, list[tuple[dict, int]]] = {p: [] for p in range(policies)}
    while min(len(v) for v in got.values()) < batches_per_learner:
        sampler.step()
        for p in range(policies):
            while (slots := sampler.take(p)) is not None:
                own = buf.is_active[slots]
                if policies > 1:
                    own = own & (buf.policy_id[slots] == p)
                got[p].append((c.learners[p].prepare_batch(slots), int(own.sum())))
                sampler.release(slots, p)
    seconds, samples = 0.0, 0
    for p, batches in got.items():
        learner = c.learners[p]
        learner.train_batch(dict(batches[0][0]))  # warm-up
        for b, own in batches[1:]:
            t0 = time.perf_counter()
            learner.train_batch(dict(b))
            seconds += time.perf_counter() - t0
            samples += own
    c.close()
    return samples / seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="cartpole", choices=sorted(CONFIGS))
    p.add_argument("--policies", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=6, help="batches timed per learner (+1 warm-up)")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--extra", default="", help="flags added to every setting, one string")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    base = [x for x in CONFIGS[a.config].surge_args if not x.startswith("--batch_size=")] + a.extra.split()
    total = int(_arg(CONFIGS[a.config].surge_args, "batch_size"))
    settings = {
        "1 policy": (1, total),
        f"{a.policies} policies, batch {total // a.policies} each": (a.policies, total // a.policies),
        f"{a.policies} policies, batch {total} each": (a.policies, total),
    }
    results: dict[str, list[float]] = {k: [] for k in settings}
    for i in range(a.rounds):
        for name, (n, b) in settings.items():
            results[name].append(measure(base, n, b, a.batches + 1))
            print(f"round {i + 1} {name}: {results[name][-1]:.0f} own samples/s", flush=True)
    one = statistics.median(results["1 policy"])
    print(f"\n{a.config} {a.extra}, learners only, {a.threads} torch thread(s): own samples/s of training")
    print("| setting | rounds | median | / 1 policy |")
    print("|---|---|---|---|")
    for name, xs in results.items():
        med = statistics.median(xs)
        print(f"| {name} | {' / '.join(f'{x:.0f}' for x in xs)} | {med:.0f} | {med / one:.2f} |")


if __name__ == "__main__":
    main()
