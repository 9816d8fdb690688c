"""The inputs of the cost model (`cost_model.py`) that a whole training run cannot give: what the
learner and the inference worker do on the host per env frame, and how many torch operations
(kernel launches, once the model is on a GPU) they dispatch per env frame.

    python benchmarks/cost_model_inputs.py --config doom_benchmark --config pong_1epoch \\
        --config cartpole --config halfcheetah --out /tmp/cost_model_inputs.json
    PYTHONPATH=/tmp/surge_0ce9d02 python benchmarks/cost_model_inputs.py --config doom_benchmark

In one process, with the benchmark config's flags in the serial placement (one torch thread,
`--mixed_precision=none`: the float32 graph a GPU run launches), it steps the sampler and times,
in CPU seconds of this thread (`time.thread_time`, steadier than wall time on a shared machine):

- inference: each `InferenceWorker.infer` call (one batched forward pass over a split's requests)
  and the algorithm's `act` inside it; `infer` minus `act` is the host side (gathering the
  requests' rows, writing actions and states back), which a GPU does not take over;
- learner: `prepare_batch` (gathering a batch's slots, the host side of the learner) and
  `train_batch` (the model's compute on this CPU, which a GPU takes over);
- torch operations per `act` call and per `train_batch`, counted with a `TorchDispatchMode`,
  view operations (reshape, slicing: no kernel) left out. On a GPU each of the others is about one
  kernel launch, and its host side costs the cost model's `launch_us`.

Figures are per env frame (µs) or per call: an `act` call's operations do not depend on its rows
(the agents of its requests; the serial placement puts every split in one call), a
`train_batch`'s frames are the batch size. Runs with the checkout on PYTHONPATH, so
an earlier commit is measured the same way (0ce9d02's modules are found under their old paths).
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402


def _count_ops(fn: Any, *args: Any) -> tuple[Any, int]:
    """`fn(*args)` and the number of non-view aten operations it dispatched."""
    from torch.utils._python_dispatch import TorchDispatchMode

    count = collections.Counter[str]()

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            if not getattr(func, "is_view", False):
                count["ops"] += 1
            return func(*args, **(kwargs or {}))

    with _Count():
        out = fn(*args)
    return out, count["ops"]


def _imports() -> tuple[Any, Any, Any]:
    """parse_cfg, build_components, SerialSampler of the surge on sys.path (today's module paths,
    else those of 0ce9d02)."""
    try:
        from surge.app.resolve import parse_cfg
        from surge.runtime.serial_sampler import SerialSampler
    except ImportError:  # 0ce9d02
        from surge.cfg.cli import parse_cfg  # type: ignore[no-redef]
        from surge.runtime.serial import SerialSampler  # type: ignore[no-redef]
    from surge.runtime.components import build_components

    return parse_cfg, build_components, SerialSampler


def measure(config: str, batches: int = 6, count_every: int = 10) -> dict[str, float]:
    """Host-side µs per env frame and operations per frame of `config`'s inference and learner."""
    parse_cfg, build_components, SerialSampler = _imports()
    cfg = parse_cfg(
        [
            *CONFIGS[config].surge_args,
            "--serial_mode=True",
            "--decorrelate_experience_max_seconds=0",
            "--mixed_precision=none",
        ]
    )
    c = build_components(cfg)
    inf, learner = c.inferences[0], c.learners[0]
    rec: dict[str, list[float]] = collections.defaultdict(list)
    act, infer = inf.act, inf.infer

    def timed_act(model: Any, obs: Any, rnn_states: torch.Tensor, ctx: Any) -> Any:
        rows = int(rnn_states.shape[0])
        if len(rec["act_s"]) % count_every == count_every - 1:
            out, ops = _count_ops(act, model, obs, rnn_states, ctx)
            rec["act_ops"].append(ops)
            rec["act_s"].append(float("nan"))
            return out
        t0 = time.thread_time()
        out = act(model, obs, rnn_states, ctx)
        rec["act_s"].append((time.thread_time() - t0) / rows)
        rec["rows"].append(rows)
        return out

    def timed_infer(requests: Any) -> None:
        n0 = len(rec["act_s"])
        t0 = time.thread_time()
        infer(requests)
        dt = time.thread_time() - t0
        new = rec["act_s"][n0:]
        if new and all(x == x for x in new):  # no counted call inside: its time is not inflated
            rows = sum(rec["rows"][-len(new) :])
            rec["infer_host_s"].append(
                dt / rows - sum(x * r for x, r in zip(new, rec["rows"][-len(new) :], strict=True)) / rows
            )

    inf.act, inf.infer = timed_act, timed_infer
    sampler = SerialSampler(c)
    prepared: list[dict[str, Any]] = []
    frames = 0
    while len(prepared) < batches:
        sampler.step()
        while (slots := sampler.take(0)) is not None:
            t0 = time.thread_time()
            b = learner.prepare_batch(slots)
            dt = time.thread_time() - t0
            n = int(slots.numel()) * cfg.rollout
            frames = n
            rec["prepare_s"].append(dt / n)
            prepared.append(b)
            sampler.release(slots, 0)
    inf.act, inf.infer = act, infer
    learner.train_batch(dict(prepared[0]))  # warm-up
    for b in prepared[1:]:
        t0 = time.thread_time()
        learner.train_batch(dict(b))
        rec["train_s"].append((time.thread_time() - t0) / frames)
    _, ops = _count_ops(learner.train_batch, dict(prepared[0]))
    c.close()

    def med(key: str, scale: float = 1e6) -> float:
        xs = [x for x in rec[key] if x == x]
        return statistics.median(xs) * scale if xs else float("nan")

    return {
        "inference_rows_per_call": med("rows", 1.0),
        "inference_act_us": med("act_s"),
        "inference_host_us": med("infer_host_s"),
        "inference_ops_per_call": med("act_ops", 1.0),
        "learner_batch_frames": float(frames),
        "learner_prepare_us": med("prepare_s"),
        "learner_train_us": med("train_s"),
        "learner_ops_per_frame": ops / frames,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--batches", type=int, default=6, help="learner batches to collect and time")
    ap.add_argument("--out", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    import surge

    load = open("/proc/loadavg").read().split()[0]
    res = {}
    for name in a.config:
        res[name] = measure(name, a.batches)
        print(f"{name} (surge from {Path(surge.__file__).parent.parent}, load {load}):", flush=True)
        for k, v in res[name].items():
            print(f"  {k}: {v:.2f}", flush=True)
    if a.out:
        a.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
