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
  `train_batch` (the model's compute on this CPU, which a GPU takes over). Freed memory is
  retained and each timed batch dropped before the next, as in a training process, so a batch
  reuses its predecessor's memory (before 2026-12-03 every batch was kept, each came fresh from
  the system, and a page fault per 4 KiB made doom_benchmark's figure about 2x too high);
- `learner_staging_us`: one more copy of a prepared batch into reused memory, what a `.to(cuda)`
  from pageable memory costs the host (the driver stages the bytes; a gather into page-locked
  memory, as today's CUDA learner makes, spares it); `learner_publish_us` and
  `inference_load_us`: `SharedWeights.publish` after each batch and `load_into` once per policy
  version, per env frame of a batch;
- `learner_dma_host_us` against `learner_gather_us`: what a CUDA learner's batch costs the host by
  DMA (`surge.data.device_copy.copy_runs` to the "meta" device: the small fields' gather and every
  call, no byte moved) and the host gather of every field it replaced (`buffers.gather`), on the
  same slots; `learner_dma_leaves`: the fields that go by DMA (one copy call per run of slots each);
- torch operations per `act` call and per `train_batch`, counted with a `TorchDispatchMode`,
  view operations (reshape, slicing: no kernel) left out. On a GPU each of the others is about one
  kernel launch, and its host side costs the cost model's `launch_us`. `--count=gpu` (the
  default) counts them as a CUDA run launches them: an RNN module's call is one operation forward
  and one backward (cuDNN), where this CPU decomposes it into per-step operations (`--count=cpu`,
  how the figures before 2026-12-03 were counted). The learner's batch is counted as collected
  (the first batches of a run: no episode end inside) and again with `--ends` ends spread over it,
  both without the diagnostic statistics that an async learner computes on one batch a second
  (`surge.runtime.stats_cadence`), and once with them.

Figures are per env frame (µs) or per call: an `act` call's operations do not depend on its rows
(the agents of its requests; the serial placement puts every split in one call). An env frame is
what a run's `env_frames` counts, env steps x `frameskip` (4 on doom_benchmark and the Atari
configs): a row of an inference pass is `frameskip` env frames, a `train_batch` of B samples
B x `frameskip` (before the second session of 2026-12-03 both were counted as one frame per sample, 4x too many µs and
operations per frame on the frameskip-4 configs, against figures logged per env frame). Runs with
the checkout on PYTHONPATH, so
an earlier commit is measured the same way (0ce9d02's modules are found under their old paths).
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402


def _grad_nodes(x: Any) -> list[Any]:
    if isinstance(x, torch.Tensor):
        return [x.grad_fn] if x.grad_fn is not None else []
    if isinstance(x, tuple | list):  # a PackedSequence is a tuple too
        return [n for y in x for n in _grad_nodes(y)]
    return []


def _count_ops(fn: Any, *args: Any, count: str = "gpu") -> tuple[Any, int]:
    """`fn(*args)` and the number of non-view aten operations it dispatched.

    `count="cpu"`: every operation this CPU dispatches. `count="gpu"`: what a CUDA run launches
    from the host: a call of an `nn.RNNBase` module is one operation forward and one backward
    (cuDNN's `_cudnn_rnn` and its backward), not the per-step operations the CPU decomposes it
    into (a 32-step GRU: about 1060), `RnnCore.sequence` takes the packed path it takes on a GPU, and
    the return estimators' recurrence the torch path (not the numpy one the CPU takes).
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    n = collections.Counter[str]()
    rnn_nodes: set[Any] = set()
    stops: list[set[Any]] = []

    def pre(mod: Any, inp: Any) -> None:
        if isinstance(mod, torch.nn.RNNBase):
            stops.append(set(_grad_nodes(inp)))

    def post(mod: Any, inp: Any, out: Any) -> None:
        if not isinstance(mod, torch.nn.RNNBase):
            return
        stop = stops.pop()
        todo = _grad_nodes(out)
        n["ops"] += 1 + bool(todo)  # forward, and backward when it has a graph
        while todo:  # the RNN's own autograd nodes, whose backward operations cuDNN does in one
            node = todo.pop()
            if node is None or node in stop or node in rnn_nodes or type(node).__name__ == "AccumulateGrad":
                continue
            rnn_nodes.add(node)
            todo.extend(m for m, _ in node.next_functions)

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            inside = count == "gpu" and (stops or torch._C._current_autograd_node() in rnn_nodes)
            if not getattr(func, "is_view", False) and not inside:
                n["ops"] += 1
            return func(*args, **(kwargs or {}))

    hooks = []
    restore = None
    if count == "gpu":
        mm = torch.nn.modules.module
        hooks = [mm.register_module_forward_pre_hook(pre), mm.register_module_forward_hook(post)]
        try:
            from surge.models.cores import RnnCore
        except ImportError:
            RnnCore = None
        if RnnCore is not None and hasattr(RnnCore, "sequence_packed"):  # take the CUDA path
            restore = RnnCore.sequence_split

            def as_on_gpu(
                self: Any, x: Any, chunk_states: Any, dones: Any, recurrence: int, cuts: Any
            ) -> Any:
                if len(cuts) <= -(-x.shape[0] // recurrence):  # no end inside a chunk
                    return restore(self, x, chunk_states, dones, recurrence, cuts)
                d = dones.detach().to("cpu", torch.float32).numpy()
                return self.sequence_packed(x, chunk_states, d, recurrence)

            RnnCore.sequence_split = as_on_gpu
    scan = _scan_as_on_gpu() if count == "gpu" else None
    try:
        with _Count():
            out = fn(*args)
    finally:
        for h in hooks:
            h.remove()
        if restore is not None:
            RnnCore.sequence_split = restore
        if scan is not None:
            scan[0].reverse_scan = scan[1]
    return out, n["ops"]


def _torch_loop_0ce9d02(x: Any, coef: Any, init: Any) -> Any:
    """0ce9d02's `reverse_scan` off the CPU (its module has no function of its own for it): an
    `empty_like`, then a product, a sum and a copy into the output per step."""
    out, acc = torch.empty_like(x), init
    for t in reversed(range(x.shape[0])):
        acc = x[t] + coef[t] * acc
        out[t] = acc
    return out


def _scan_as_on_gpu() -> tuple[Any, Any] | None:
    """Makes the return estimators' `reverse_scan` take the path it takes off the CPU (on the CPU
    it runs over numpy views, which dispatch no torch operation; on a GPU every step is launched):
    today's `reverse_scan_matrix` where the module has it, else the torch loop (0ce9d02). Returns
    (module, the function to put back), or None where no such module is found."""
    for name in ("surge.learning.returns", "surge.algorithms.returns"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        original = mod.reverse_scan
        matrix = getattr(mod, "reverse_scan_matrix", None)
        limit = getattr(mod, "MATRIX_SCAN_MAX_ELEMENTS", 0)
        loop = getattr(mod, "_reverse_scan_loop", _torch_loop_0ce9d02)

        def on_gpu(
            x: Any, coef: Any, init: Any, matrix: Any = matrix, limit: int = limit, loop: Any = loop
        ) -> Any:
            if matrix is not None and x.shape[0] * x.shape[0] * x[0].numel() <= limit:
                return matrix(x, coef, init)
            return loop(x, coef, init)

        mod.reverse_scan = on_gpu
        return mod, original
    return None


def _with_ends(batch: Any, ends: int) -> dict[str, Any]:
    """A copy of a prepared batch with `ends` episode ends (terminated steps; 0ce9d02: "dones")
    spread over its steps and trajectories, as a steady-state batch has them (the batches a run
    collects first have none: every episode starts at once)."""
    b = dict(batch)
    key = "terminated" if "terminated" in b else "dones"
    d = b[key].clone()
    T, N = d.shape[:2]
    for i in range(ends):
        d[(7 * i + 3) % T, (5 * i + 1) % N] = 1.0
    b[key] = d
    return b


def _staging_copy(batch: Any, buffers: list[Tensor]) -> float:
    """Thread CPU seconds of copying every tensor of `batch` once more into reused memory: what a
    `.to(cuda)` from pageable memory costs the host (the driver stages the bytes through its own
    page-locked buffer), which a gather into page-locked memory spares."""
    leaves = [x for x in _leaves(batch) if isinstance(x, Tensor)]
    while len(buffers) < len(leaves):
        buffers.append(torch.empty(0, dtype=torch.uint8))
    t0 = time.thread_time()
    for x, buf in zip(leaves, buffers, strict=False):
        nbytes = x.numel() * x.element_size()
        if buf.numel() < nbytes:
            buf.resize_(nbytes)
        buf[:nbytes].view(x.dtype).view(x.shape).copy_(x)
    return time.thread_time() - t0


def _dma_host(buffers: Any, slots: Tensor) -> tuple[float, float, int, int] | None:
    """What a CUDA learner's batch costs the host by DMA (`surge.data.device_copy`) against the
    host gather it replaced, on the batch `slots`: thread CPU seconds of `copy_runs` to the "meta"
    device (the small fields' host gather and every call made, but no byte moved: on a GPU the
    copies of the large fields are the DMA engine's), of `buffers.gather` (every field gathered on
    the host, the path before), the large fields' leaves and their runs of consecutive slots. None
    for a checkout without `device_copy` (before 9bb975d)."""
    try:
        from surge.data.device_copy import _big_leaves, copy_runs, slot_runs
    except ImportError:
        return None
    t0 = time.thread_time()
    copy_runs(buffers, slots, torch.device("meta"))
    t1 = time.thread_time()
    buffers.gather(slots)
    t2 = time.thread_time()
    return t1 - t0, t2 - t1, len(_big_leaves(buffers)), len(slot_runs(slots))


def _weights_copy(learner_model: Any, inference_model: Any, reps: int = 30) -> tuple[float, float]:
    """Thread CPU seconds of one `SharedWeights.publish` (the learner, after every batch) and one
    `load_into` (the inference worker, once per new policy version), medians of `reps`."""
    from surge.runtime.shared_state import SharedWeights

    shared = SharedWeights(learner_model)
    pub, load = [], []
    for i in range(reps + 1):
        t0 = time.thread_time()
        shared.publish(learner_model, i)
        t1 = time.thread_time()
        shared.load_into(inference_model)
        t2 = time.thread_time()
        if i:  # the first call makes the copy plan
            pub.append(t1 - t0)
            load.append(t2 - t1)
    return statistics.median(pub), statistics.median(load)


def _leaves(x: Any) -> list[Any]:
    if isinstance(x, dict) or hasattr(x, "items"):
        return [leaf for v in x.values() for leaf in _leaves(v)]
    return [x]


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


def measure(
    config: str, batches: int = 6, count_every: int = 10, count: str = "gpu", ends: int = 2
) -> dict[str, float]:
    """Host-side µs per env frame and operations per frame of `config`'s inference and learner."""
    parse_cfg, build_components, SerialSampler = _imports()
    from surge.runtime.process_setup import retain_freed_memory

    retain_freed_memory()  # as every training process does (0ce9d02's too)
    cfg = parse_cfg(
        [
            *CONFIGS[config].surge_args,
            "--serial_mode=True",
            "--decorrelate_experience_max_seconds=0",
            "--mixed_precision=none",
        ]
    )
    from surge.cfg.config import env_frameskip  # 0ce9d02 has it there too

    frameskip = env_frameskip(cfg)
    c = build_components(cfg)
    inf, learner = c.inferences[0], c.learners[0]
    rec: dict[str, list[float]] = collections.defaultdict(list)
    act, infer = inf.act, inf.infer

    def timed_act(model: Any, obs: Any, rnn_states: torch.Tensor, ctx: Any) -> Any:
        rows = int(rnn_states.shape[0])
        if len(rec["act_s"]) % count_every == count_every - 1:
            out, ops = _count_ops(act, model, obs, rnn_states, ctx, count=count)
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
    staging: list[Tensor] = []
    while len(rec["prepare_s"]) < batches + len(prepared):
        sampler.step()
        while (slots := sampler.take(0)) is not None:
            t0 = time.thread_time()
            b = learner.prepare_batch(slots)
            dt = time.thread_time() - t0
            n = int(slots.numel()) * cfg.rollout * frameskip  # env frames of the batch
            frames = n
            sampler.release(slots, 0)
            if len(prepared) < 3:  # trained below; their memory stays taken, as a fresh run's first batches
                prepared.append(b)
                continue
            # later batches are dropped, so the next one reuses their memory as a training run's
            # learner does (retain_freed_memory; a CUDA learner's pinned staging is cached the same way)
            rec["prepare_s"].append(dt / n)
            rec["staging_s"].append(_staging_copy(b, staging) / n)
            dma = _dma_host(learner.buffers, slots)
            if dma is not None:
                rec["dma_s"].append(dma[0] / n)
                rec["gather_s"].append(dma[1] / n)
                rec["dma_big_leaves"].append(dma[2])
            del b
    inf.act, inf.infer = act, infer
    learner.train_batch(dict(prepared[0]))  # warm-up
    for b in prepared[1:] * max(1, batches // 2):
        t0 = time.thread_time()
        learner.train_batch(dict(b))
        rec["train_s"].append((time.thread_time() - t0) / frames)
    publish_s, load_s = _weights_copy(learner.model, inf.model)
    # an async learner computes its diagnostic statistics on one batch a second (`StatsCadence`):
    # the batches counted are the others; one with diagnostics is counted apart (0ce9d02 computed
    # them on every batch and has no such switch)
    ops_diag = float("nan")
    if hasattr(learner, "diagnostics"):
        learner.diagnostics = True
        _, ops_diag = _count_ops(learner.train_batch, dict(prepared[0]), count=count)
        learner.diagnostics = False
    _, ops = _count_ops(learner.train_batch, dict(prepared[0]), count=count)
    _, ops_ends = _count_ops(learner.train_batch, _with_ends(prepared[0], ends), count=count)
    c.close()

    def med(key: str, scale: float = 1e6) -> float:
        xs = [x for x in rec[key] if x == x]
        return statistics.median(xs) * scale if xs else float("nan")

    return {
        "frameskip": float(frameskip),
        "inference_rows_per_call": med("rows", 1.0),
        "inference_act_us": med("act_s", 1e6 / frameskip),  # a row is `frameskip` env frames
        "inference_host_us": med("infer_host_s", 1e6 / frameskip),
        "inference_ops_per_call": med("act_ops", 1.0),
        "learner_batch_frames": float(frames),
        "learner_prepare_us": med("prepare_s"),
        "learner_staging_us": med("staging_s"),
        "learner_train_us": med("train_s"),
        # the DMA path's host side (`_dma_host`): its own work per env frame, the host gather it
        # replaced, and the large fields' leaves (one copy call per run of slots each)
        "learner_dma_host_us": med("dma_s"),
        "learner_gather_us": med("gather_s"),
        "learner_dma_leaves": med("dma_big_leaves", 1.0),
        "learner_publish_us": publish_s * 1e6 / frames,
        "inference_load_us": load_s * 1e6 / frames,
        "learner_ops_per_frame": ops / frames,
        f"learner_ops_per_frame_{ends}_ends": ops_ends / frames,
        "learner_ops_per_frame_with_diagnostics": ops_diag / frames,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--batches", type=int, default=6, help="learner batches to collect and time")
    ap.add_argument(
        "--count",
        choices=["gpu", "cpu"],
        default="gpu",
        help="operations as a CUDA run launches them (an RNN call is one each way) or as this CPU dispatches them",
    )
    ap.add_argument("--ends", type=int, default=2, help="episode ends in the batch counted a second time")
    ap.add_argument("--out", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    import surge

    label = f"surge from {Path(surge.__file__).parent.parent}"
    run_configs(a.config, lambda n: measure(n, a.batches, count=a.count, ends=a.ends), label, a.out, 3)
    return 0


def run_configs(
    names: list[str], measure_one: Any, label: str, out: Path | None, digits: int
) -> dict[str, dict[str, float]]:
    """`measure_one(name)` per config, each printed as it comes (with the machine's load at the
    start), and all of them written to `out` as JSON when given."""
    load = open("/proc/loadavg").read().split()[0]
    res = {}
    for name in names:
        res[name] = measure_one(name)
        print(f"{name} ({label}, load {load}):", flush=True)
        for k, v in res[name].items():
            print(f"  {k}: {v:.{digits}f}", flush=True)
    if out:
        out.write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    raise SystemExit(main())
