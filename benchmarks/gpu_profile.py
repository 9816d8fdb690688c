"""Where a GPU role's CPU goes, op by op: torch's profiler over the inference worker's passes and the
learner's batches of `role_ceilings.py` (the same stand-ins), the model on `--device`.

    python benchmarks/gpu_profile.py --config pong_1epoch --config doom_benchmark --device cuda

For each role it prints the thread CPU per call, the CUDA runtime calls per call (kernel launches,
copies, synchronisations) and torch's table of the operations by their own CPU time. On a GPU that
tells launch cost from waiting: with CUDA's default spin wait, a synchronisation's CPU time is the
GPU's compute that the thread waited through (`cudaStreamSynchronize`, `cudaMemcpyAsync` of a
blocking `.cpu()`), where launching shows as `cudaLaunchKernel` and the Python and dispatcher time
around it. Runs on the CPU too (no CUDA rows then), for a check of the script itself.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402
from gpu_timing import set_cuda_schedule, sync  # noqa: E402
from role_ceilings import EXTRA_FLAGS, _components, hold_batches, own_inference  # noqa: E402

from surge.data.trajectory import tree_map  # noqa: E402
from surge.runtime.components import Components  # noqa: E402
from surge.runtime.learner_loop import LearnerLoop  # noqa: E402
from surge.runtime.process_setup import retain_freed_memory  # noqa: E402
from surge.sampling.inference_loop import InferenceLoop  # noqa: E402


def _inference_step(c: Components) -> Callable[[], None]:
    """One inference pass over every split's request (as `role_ceilings.inference_alone`: a model
    of its own, CUDA graphs as the config says)."""
    held = hold_batches(c, 1)[0]
    splits = [w.splits[s] for w in c.workers for s in range(len(w.splits))]
    for split in splits:
        index = torch.as_tensor(split.np_slots)
        source = held[torch.arange(len(index)) % len(held)]
        tree_map(lambda x: x.index_copy_(0, index, x[source]), c.buffers.obs)  # noqa: B023
    loop, ts = InferenceLoop(own_inference(c)), itertools.cycle(range(c.cfg.rollout))

    def step() -> None:
        t = next(ts)
        loop.handle([(s.index, t) for s in splits])

    return step


def _learner_step(c: Components) -> Callable[[], None]:
    """One learner batch on held trajectories (as `role_ceilings.learner_alone`)."""
    held = hold_batches(c, 2)
    learner = c.learners[0]
    loop, version, batch = LearnerLoop(c.models[0], learner, 0), learner.policy_version, itertools.cycle(held)

    def step() -> None:
        learner.policy_version = version
        loop.train(next(batch), 0)

    return step


def profile_role(c: Components, role: str, calls: int, rows: int) -> None:
    step = _inference_step(c) if role == "inference" else _learner_step(c)
    for _ in range(5):
        step()
    sync(c.device)
    w0, t0 = time.perf_counter(), time.thread_time()
    for _ in range(calls):
        step()
    sync(c.device)
    wall, cpu = (time.perf_counter() - w0) / calls, (time.thread_time() - t0) / calls
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if c.device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(calls):
            step()
        sync(c.device)
    events = prof.key_averages()
    runtime = {
        e.key: e.count / calls
        for e in events
        if e.key.startswith("cuda") and any(k in e.key for k in ("Launch", "Memcpy", "Synchronize", "Event"))
    }
    print(
        f"\n### {role}: {rows} rows a call; wall {wall * 1e3:.2f} ms, thread CPU {cpu * 1e3:.2f} ms a call "
        "(without the profiler)"
    )
    print(
        "CUDA runtime calls a call: "
        + (", ".join(f"{k} {v:.1f}" for k, v in sorted(runtime.items())) or "none")
    )
    print(events.table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--role", action="append", choices=["inference", "learner"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--calls", type=int, default=20, help="profiled calls per role")
    ap.add_argument("--cuda_schedule", help="how the CPU waits for the GPU: auto, spin, yield, blocking")
    ap.add_argument("--no_cuda_graphs", action="store_true", help="inference without CUDA graphs")
    a = ap.parse_args(argv)
    if a.no_cuda_graphs:
        EXTRA_FLAGS.append("--cuda_graphs=False")
    if a.cuda_schedule:  # before any CUDA work
        set_cuda_schedule(a.cuda_schedule, torch.device(a.device).index or 0)
    torch.set_num_threads(1)
    retain_freed_memory()
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    for name in a.config:
        for role in a.role or ["inference", "learner"]:
            c = _components(name, a.device)
            try:
                rows = sum(len(w.splits[s].slots) for w in c.workers for s in range(len(w.splits)))
                print(f"\n## {name}, {role}, device {a.device}, CUDA schedule {a.cuda_schedule or 'default'}")
                profile_role(c, role, a.calls, rows if role == "inference" else c.cfg.batch_size)
            finally:
                c.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
