"""`--mixed_precision` speed: the APPO learner's `train_batch` on a fixed Atari-shaped batch (Pong,
84x84x4 uint8 frames, the atari family's conv encoder) and inference's `act` on a batch of frames,
float32 against bf16 (and fp16 on CUDA), alternating over repetitions; prints the median seconds of
each and the ratio median(fp32) / median(mode) (> 1: the mode is faster). Learning is not measured.

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/mixed_precision.py --reps 5
    PYTHONPATH=. python benchmarks/mixed_precision.py --device gpu --modes bf16 fp16 --threads 8

The batch is collected once with the serial sampler from atari_pong (the Pong defaults: rollout
128, --batch_size, 1 ppo epoch here by default), copied, and each repetition trains a fresh copy
of the same learner on it, so every mode does the same work.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from surge.app.resolve import parse_cfg
from surge.data.trajectory import tree_map
from surge.learning.amp import autocast, make_grad_scaler
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--modes", nargs="+", default=["bf16"])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--batch_size", type=int, default=1024)
    p.add_argument("--ppo_epochs", type=int, default=1)
    p.add_argument("--act_batch", type=int, default=256)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    cfg = parse_cfg(
        [
            "--env=atari_pong",
            "--serial_mode=True",
            "--num_workers=1",
            f"--num_envs_per_worker={a.batch_size // 128}",
            "--worker_num_splits=1",
            "--rollout=128",
            f"--batch_size={a.batch_size}",
            "--num_batches_per_iteration=1",
            f"--ppo_epochs={a.ppo_epochs}",
            f"--device={a.device}",
            f"--num_torch_threads={a.threads}",
            "--seed=1",
            "--train_dir=/tmp/surge_mixed_precision_bench",
        ]
    )
    c = build_components(cfg)
    learner, device = c.learners[0], c.device
    sampler = SerialSampler(c)
    slots = None
    while slots is None:
        sampler.step()
        slots = sampler.take()
    batch = learner.prepare_batch(slots)
    sampler.release(slots)
    start_model = copy.deepcopy(learner.model.state_dict())
    start_optim = copy.deepcopy(learner.optimizer.state_dict())
    frames = batch["obs"]  # `[T+1, N, 4, 84, 84]` uint8
    obs = frames.reshape(-1, *frames.shape[2:])[: a.act_batch].contiguous()
    states = torch.zeros(obs.shape[0], learner.model.rnn_state_size, device=device)

    def train(mode: str) -> float:
        learner.model.load_state_dict(start_model)
        learner.optimizer.load_state_dict(start_optim)
        learner.cfg.mixed_precision = mode
        learner.__dict__["_autocast"] = lambda: autocast(mode, device)
        learner.grad_scaler = make_grad_scaler(mode, device)
        b = tree_map(lambda x: x.clone(), batch)
        _sync(device)
        t = time.perf_counter()
        learner.train_batch(b)
        _sync(device)
        return time.perf_counter() - t

    def act(mode: str, n: int = 10) -> float:
        _sync(device)
        t = time.perf_counter()
        with torch.no_grad():
            for _ in range(n):
                with autocast(mode, device):
                    learner.model.act(obs, states)
        _sync(device)
        return (time.perf_counter() - t) / n

    modes = ["none", *a.modes]
    for m in modes:  # warm-up
        train(m), act(m, 2)
    times: dict[str, dict[str, list[float]]] = {m: {"train": [], "act": []} for m in modes}
    for _ in range(a.reps):
        for m in modes:
            times[m]["train"].append(train(m))
            times[m]["act"].append(act(m))
    print(
        f"device={a.device} threads={a.threads} train_batch: {a.batch_size} samples x {a.ppo_epochs} "
        f"epoch(s); act: batch {obs.shape[0]}; reps={a.reps} (alternating); median seconds"
    )
    base = {k: statistics.median(v) for k, v in times["none"].items()}
    for m in modes:
        med = {k: statistics.median(v) for k, v in times[m].items()}
        print(
            f"  {m:5s} train_batch {med['train']:.3f} s (x{base['train'] / med['train']:.2f} vs fp32)"
            f"  act {med['act'] * 1e3:.1f} ms (x{base['act'] / med['act']:.2f} vs fp32)"
        )


if __name__ == "__main__":
    main()
