"""Every role's ceiling, measured on its own (issue 57, item 1): one role driven alone at full
speed in this process, the other roles replaced by stand-ins that cost nothing, and its env
frames/s ceiling with the host side separated from model compute.

    python benchmarks/role_ceilings.py --config cartpole --config pong_1epoch \\
        --config doom_benchmark --seconds 20
    python benchmarks/role_ceilings.py --config doom_benchmark --device cuda   # model on the GPU

Each role is built from the benchmark config's flags in the serial placement (`build_components`,
one torch thread, `--device` as given: the engine's own device handling moves the model and the
batches) and run for `--seconds` after a warm-up:

- learner: a few batches' trajectories collected once with the serial sampler and kept in the
  buffers (their slots held, as a learner holds them), then trained again and again through
  `LearnerLoop.train(slots)`: `prepare_batch` (host: gathering the slots, converting observations,
  copies to the device) and `train_batch` (model compute). The stand-in for fresh trajectories
  resets `policy_version` before each batch, so that every batch has the policy lag of the first.
- learner_threads: the same batches as the learner's process trains them (`--train_in_background_thread`,
  the default): the next batch prepared on this thread while a training thread trains the one
  before; against `learner`, what the two threads overlap.
- inference: the requests of every split of the config's `--num_workers` rollout workers at one
  step (what a saturated inference worker gets in one batch, as the serial placement acts), handled
  again and again through `InferenceLoop.handle`, t cycling over the rollout; host side = `infer`
  minus the model's `act`. The worker has a model of its own, as an inference process has, so
  that `--cuda_graphs` (the config's, on by default) acts on a GPU; `--no_cuda_graphs` measures the
  eager pass. On the CPU, `--gpu_data_path` reads and writes the buffers as a GPU's inference
  worker does (the graphed path, its forward pass run eagerly): its host side, measured here.
- rollout: a `RolloutLoop` stepping the real envs, the actions written straight into the action
  buffers from a pool of random valid actions (the stand-in for inference) and every finished
  block released at once (the stand-in for the learner). Run twice: plain (the ceiling) and with
  each env call timed (the env's own step time; the rest is the framework's per-step Python).
- serial: the serial placement's loop (sampler, in-process acting, `LearnerLoop`) for the same
  time, and the rate the ceilings predict for it: its roles share one process, so
  1 / rate = Σ_roles 1 / ceiling. A second, timed run gives what each role costs inside it, to
  set beside what it costs alone.

The process keeps freed memory as a training run's does (`retain_freed_memory`).

Figures: env frames (agent steps × frameskip); rate per wall second and per CPU second of this
process (`time.process_time`: all its threads); CPU µs per env frame. Host and compute are CPU
seconds of this thread (`time.thread_time`), the GPU synchronized before each reading on cuda
(`torch.cuda.synchronize` usually waits busily, so there "compute" is mostly the GPU's time). The
env's game processes (ViZDoom's engine) are other processes: their CPU is reported apart ("game")
and is not in the process's CPU.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402
from gpu_timing import gpu_busy_us, set_cuda_schedule, sync  # noqa: E402
from process_cpu import _processes  # noqa: E402

import surge.learning.base  # noqa: E402 - `--host_gather` replaces its device_copy_for
from surge.app.resolve import parse_cfg  # noqa: E402
from surge.data.trajectory import tree_map  # noqa: E402
from surge.runtime.components import Components, build_components, make_inference  # noqa: E402
from surge.runtime.learner_loop import LearnerLoop  # noqa: E402
from surge.runtime.learner_process import TrainerThread  # noqa: E402
from surge.runtime.process_setup import retain_freed_memory  # noqa: E402
from surge.runtime.serial_sampler import SerialSampler  # noqa: E402
from surge.sampling.inference import InferenceWorker  # noqa: E402
from surge.sampling.inference_loop import InferenceLoop  # noqa: E402
from surge.sampling.rollout_loop import RolloutLoop  # noqa: E402


@dataclass
class Ceiling:
    """One role's measurement. `parts`: CPU µs per env frame of each part (host, compute, env, ...)."""

    role: str
    frames: int
    wall_s: float
    cpu_s: float
    parts: dict[str, float] = field(default_factory=dict)
    thread_s: float = float("nan")  # CPU seconds of the measuring thread alone

    @property
    def fps_thread(self) -> float:
        """Env frames per CPU second of the thread that ran the role (on the CPU with one torch
        thread, all of its work; unlike `fps_cpu`, blind to other threads of the process, such as
        a test runner's)."""
        return self.frames / self.thread_s

    @property
    def fps_wall(self) -> float:
        """Env frames per wall second."""
        return self.frames / self.wall_s

    @property
    def fps_cpu(self) -> float:
        """Env frames per CPU second of this process."""
        return self.frames / self.cpu_s

    @property
    def cpu_us(self) -> float:
        """CPU µs of this process per env frame."""
        return self.cpu_s / self.frames * 1e6

    def row(self) -> dict[str, Any]:
        """The figures as one flat dict (the JSON of `--out`)."""
        return {
            "role": self.role,
            "frames": self.frames,
            "fps_wall": self.fps_wall,
            "fps_cpu": self.fps_cpu,
            "cpu_us": self.cpu_us,
            **self.parts,
        }


def _children_cpu() -> float:
    """CPU seconds of this process's descendants (ViZDoom's engine processes)."""
    procs = _processes()
    mine, total, grew = {os.getpid()}, 0.0, True
    while grew:
        kids = {p for p, (_, parent, _) in procs.items() if parent in mine and p not in mine}
        grew = bool(kids)
        mine |= kids
        total += sum(procs[p][2] for p in kids)
    return total


#: flags added to every config's (`--no_cuda_graphs`: `--cuda_graphs=False`)
EXTRA_FLAGS: list[str] = []


def _components(config: str, device: str) -> Components:
    cfg = parse_cfg(
        [
            *CONFIGS[config].surge_args,
            *EXTRA_FLAGS,
            "--serial_mode=True",
            "--decorrelate_experience_max_seconds=0",
            f"--device={device}",
            "--train_dir=/tmp/surge_role_ceilings",
            "--experiment=role_ceilings",
        ]
    )
    return build_components(cfg)


@dataclass
class Window:
    """What `_run` measured after the warm-up: env frames, wall, process CPU and thread CPU seconds."""

    frames: int
    wall: float
    cpu: float
    thread: float


def _run(
    c: Components, seconds: float, step: Callable[[], int], warmup: int, reset: Callable[[], None]
) -> Window:
    """Calls `step()` (it returns the env frames it made) `warmup` times, then `reset()` (zeroes the
    parts' accumulators), then `step()` for `seconds`."""
    for _ in range(warmup):
        step()
    sync(c.device)
    reset()
    frames, w0, c0, t0 = 0, time.perf_counter(), time.process_time(), time.thread_time()
    while time.perf_counter() - w0 < seconds:
        frames += step()
    sync(c.device)
    return Window(frames, time.perf_counter() - w0, time.process_time() - c0, time.thread_time() - t0)


class Timed:
    """Wraps callables, adding the thread CPU seconds spent in them to `seconds` (the GPU
    synchronized at both ends, so that device work is not left to a later reading) and counting
    the calls."""

    def __init__(self, c: Components):
        self.c, self.seconds, self.calls = c, 0.0, 0

    def reset(self) -> None:
        self.seconds, self.calls = 0.0, 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        c, clock = self.c, time.thread_time

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            sync(c.device)
            t0 = clock()
            out = fn(*args, **kwargs)
            sync(c.device)
            self.seconds += clock() - t0
            self.calls += 1
            return out

        def lean(*args: Any, **kwargs: Any) -> Any:  # on the CPU: no GPU to wait for, less overhead
            t0 = clock()
            out = fn(*args, **kwargs)
            self.seconds += clock() - t0
            self.calls += 1
            return out

        return wrapper if c.device.type == "cuda" else lean


def _us(seconds: float, frames: int) -> float:
    return seconds / frames * 1e6


def hold_batches(c: Components, n: int) -> list[torch.Tensor]:
    """Up to `n` batches' slots `[N]` int64 of policy 0, collected with the serial sampler and kept
    held (fewer when the held ones leave the rollout no free block).

    Raises:
        RuntimeError: not one batch could be collected.
    """
    sampler, held = SerialSampler(c), []
    while len(held) < n:
        if not sampler.loop.step(sampler.acting):
            break
        while len(held) < n and (slots := sampler.take(0)) is not None:
            held.append(slots)
    if not held:
        raise RuntimeError("no batch collected")
    return held


def _held_learner(c: Components, batches: int) -> tuple[list[torch.Tensor], Any, LearnerLoop, int, int]:
    """Policy 0's learner on held batches: (their slots, the learner, its `LearnerLoop`, its
    policy_version to reset before each batch, env frames per trajectory)."""
    held = hold_batches(c, batches)
    learner = c.learners[0]
    return (
        held,
        learner,
        LearnerLoop(c.models[0], learner, 0),
        learner.policy_version,
        c.info.frameskip * c.cfg.rollout,
    )


def learner_alone(config: str, device: str, seconds: float, batches: int = 4) -> Ceiling:
    """The learner training held trajectories again and again (module docstring); parts: host_us
    (`prepare_batch`), compute_us (the rest of the thread's CPU: `train_batch`)."""
    c = _components(config, device)
    try:
        held, learner, loop, version, frame = _held_learner(c, batches)
        host = Timed(c)
        learner.prepare_batch = host.wrap(learner.prepare_batch)  # type: ignore[method-assign]
        batch = itertools.cycle(held)

        def step() -> int:
            slots = next(batch)
            learner.policy_version = version  # the stand-in for fresh trajectories
            loop.train(slots, 0)
            return int(slots.numel()) * frame

        w = _run(c, seconds, step, 2, host.reset)
        parts = {
            "host_us": _us(host.seconds, w.frames),
            "compute_us": _us(w.thread - host.seconds, w.frames),
            "frames_per_call": w.frames / max(host.calls, 1),
        }
        if c.device.type == "cuda":  # the GPU's own time for the same batches (`gpu_timing`)
            parts["gpu_busy_us"] = gpu_busy_us(step, 2 * len(held), c.device)
        return Ceiling("learner", w.frames, w.wall, w.cpu, parts, w.thread)
    finally:
        c.close()


def learner_threads(config: str, device: str, seconds: float, batches: int = 4) -> Ceiling:
    """The learner as its process runs it (`--train_in_background_thread`, the default): this thread
    prepares the next batch (`prepare_batch`: the gather of its slots, the copy to the device) while
    the training thread trains the one before (`TrainerThread`, one batch ahead at most); what
    overlaps is what `learner` adds up. Parts: host_us (this thread's CPU in `prepare_batch`),
    compute_us (the training thread's CPU), per env frame trained."""
    c = _components(config, device)
    try:
        held, learner, loop, version, frame = _held_learner(c, batches)
        done = {"frames": 0, "cpu": 0.0}

        def train(item: tuple[Any, int]) -> None:  # on the training thread
            batch, frames = item
            t0 = time.thread_time()
            learner.policy_version = version  # the stand-in for fresh trajectories
            loop.train(batch, 0)
            sync(c.device)
            done["cpu"] += time.thread_time() - t0
            done["frames"] += frames

        trainer = TrainerThread(train)
        batch = itertools.cycle(held)

        def submit() -> float:  # this thread's CPU seconds in prepare_batch
            slots = next(batch)
            t0 = time.thread_time()
            prepared = learner.prepare_batch(slots)
            host = time.thread_time() - t0
            trainer.submit((prepared, int(slots.numel()) * frame))
            return host

        for _ in range(3):
            submit()
        trainer.submit(None)  # (waits for the warm-up batches, then the thread ends)
        trainer.thread.join()
        trainer = TrainerThread(train)
        done["frames"], done["cpu"] = 0, 0.0
        host, w0, c0 = 0.0, time.perf_counter(), time.process_time()
        while time.perf_counter() - w0 < seconds:
            host += submit()
        trainer.finish()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        frames = done["frames"]
        parts = {"host_us": _us(host, frames), "compute_us": _us(done["cpu"], frames)}
        return Ceiling("learner_threads", frames, wall, cpu, parts, host + done["cpu"])
    finally:
        c.close()


def inference_alone(config: str, device: str, seconds: float) -> Ceiling:
    """The inference worker handling every split's request again and again (module docstring);
    parts: host_us (`infer` minus `act`), compute_us (`act`)."""
    c = _components(config, device)
    try:
        held = hold_batches(c, 1)[0]
        splits = [w.splits[s] for w in c.workers for s in range(len(w.splits))]
        for split in splits:  # real observations at every t of the requested slots (else zeros)
            index = torch.as_tensor(split.np_slots)
            source = held[torch.arange(len(index)) % len(held)]
            tree_map(lambda x: x.index_copy_(0, index, x[source]), c.buffers.obs)  # noqa: B023
        inference = own_inference(c)
        loop = InferenceLoop(inference)
        act = Timed(c)
        graphed = inference._graphed
        if graphed is None:
            inference.act = act.wrap(inference.act)
        else:  # the act a pass runs: a graph's replay, or the eager pass when capture failed
            graphed._make_runner = _timed_runners(graphed._make_runner, act)  # type: ignore[method-assign]
        rows = sum(len(s.slots) for s in splits)
        ts = itertools.cycle(range(c.cfg.rollout))
        frame = c.info.frameskip

        def step() -> int:
            t = next(ts)
            loop.handle([(s.index, t) for s in splits])
            return rows * frame

        w = _run(c, seconds, step, 3, act.reset)
        parts = {
            "host_us": _us(w.thread - act.seconds, w.frames),
            "compute_us": _us(act.seconds, w.frames),
            "frames_per_call": w.frames / max(act.calls, 1),
        }
        return Ceiling("inference", w.frames, w.wall, w.cpu, parts, w.thread)
    finally:
        c.close()


#: `--gpu_data_path`: on the CPU, the inference worker takes the data path a GPU's takes
GPU_DATA_PATH: list[bool] = [False]


def own_inference(c: Components) -> InferenceWorker:
    """Policy 0's inference worker with a model of its own (a copy of the serial placement's), as
    an inference process has: `--cuda_graphs` acts on a GPU (`make_inference`'s choice, logged).
    With `GPU_DATA_PATH` on the CPU: the static buffers and writes of the graphed path, the forward
    pass run eagerly (`GraphedAct` without capture), so that the host side a GPU's inference worker
    runs is measured here."""
    model = copy.deepcopy(c.inferences[0].model)
    w = make_inference(c.layout, model, c.inferences[0].device, 0, own_model=True)
    if GPU_DATA_PATH[0] and w.device.type == "cpu":
        w = InferenceWorker(
            model,
            c.layout.buffers,
            w.device,
            w.act,
            num_actors=w.num_actors,
            reads_obs=w.reads_obs,
            cuda_graphs=True,
        )
    return w


def _timed_runners(
    make: Callable[[int], Callable[[], Any]], timed: Timed
) -> Callable[[int], Callable[[], Any]]:
    """`GraphedAct._make_runner` whose runners (a pass's replay and its wait for the outputs) are
    timed as `act`."""
    return lambda rows: timed.wrap(make(rows))


def _instant_actions(c: Components, pool: int = 16) -> Callable[[list[tuple[int, int]]], None]:
    """The stand-in for inference: `act(splits)` writes random valid actions (from a pool drawn
    once per split) at each split's `(slots, t)`."""
    space = c.info.action_space
    space.seed(0)
    actions = c.buffers.actions.numpy()
    draws = {
        (i, s): [
            np.asarray([space.sample() for _ in range(len(w.splits[s].slots))], dtype=actions.dtype).reshape(
                -1, *actions.shape[2:]
            )
            for _ in range(pool)
        ]
        for i, w in enumerate(c.workers)
        for s in range(len(w.splits))
    }
    k = itertools.count()

    def act(splits: list[tuple[int, int]]) -> None:
        j = next(k) % pool
        for i, s in splits:
            split = c.workers[i].splits[s]
            actions[split.np_index, split.t] = draws[i, s][j]

    return act


def rollout_alone(config: str, device: str, seconds: float) -> Ceiling:
    """A rollout loop stepping real envs with instant actions, every finished block released at
    once (module docstring). Two runs of `seconds`: plain (the rates), then with each env call
    timed (the parts); parts: env_us (the env calls), game_us (CPU of the env's own processes, in
    the plain run), framework_us (the timed run's thread CPU outside env calls and stand-in),
    standin_us (writing the actions)."""
    c = _components(config, device)
    try:
        pool, size = c.block_pool, c.block_pool.block_size

        def release(policy_id: int, first: int, own: Any) -> None:  # the stand-in for the learner
            pool.release(
                torch.arange(first, first + size) if own is None else torch.as_tensor(own), policy_id
            )

        loop = RolloutLoop(c.workers, release)
        for wk in c.workers:
            wk.reset()
        act = _instant_actions(c)
        frame = c.info.frameskip

        def step() -> int:
            loop.step(act)
            return sum(wk.pop_env_steps() for wk in c.workers) * frame

        g0 = _children_cpu()
        plain = _run(c, seconds, step, 20, lambda: None)
        game = _children_cpu() - g0
        env, standin = _timed_envs(c), Timed(c)
        act = standin.wrap(act)
        timed = _run(c, seconds, step, 5, lambda: (env.reset(), standin.reset()))
        split = _split_thread(timed, {"env": env, "standin": standin}, c)
        parts = {
            "env_us": split["env_us"],
            "game_us": _us(game, plain.frames),
            "framework_us": split["rest_us"],
            "standin_us": split["standin_us"],
        }
        return Ceiling("rollout", plain.frames, plain.wall, plain.cpu, parts, plain.thread)
    finally:
        c.close()


def _timed_envs(c: Components) -> Timed:
    """Wraps every env call of the run's workers (`step`, and `step_one` of a single-agent env) in
    one `Timed`, which it returns."""
    env = Timed(c)
    for wk in c.workers:
        for split in wk.splits:
            for e in split.envs:  # instance attributes: the worker's type check still sees the env
                for name in ("step", "step_one"):
                    if hasattr(e, name):
                        setattr(e, name, env.wrap(getattr(e, name)))
    return env


def _timer_overhead(c: Components, n: int = 20000) -> tuple[float, float]:
    """Thread CPU seconds per call that a `Timed` wrapper adds: (inside, whole). `inside` is in
    what it measures (between its two clock readings), `whole` is all it costs its caller; the rest
    (`whole - inside`) falls outside, into what the caller's own time is taken to be."""
    t = Timed(c)
    f = t.wrap(lambda: None)
    t0 = time.thread_time()
    for _ in range(n):
        f()
    return t.seconds / n, (time.thread_time() - t0) / n


def _split_thread(w: Window, timed: dict[str, Timed], c: Components) -> dict[str, float]:
    """CPU µs per env frame of each wrapped part of the timed run `w` (their wrappers' overhead
    taken out) and "rest_us", the thread's CPU outside them."""
    inside, whole = _timer_overhead(c)
    parts = {f"{k}_us": _us(t.seconds - t.calls * inside, w.frames) for k, t in timed.items()}
    calls = sum(t.calls for t in timed.values())
    parts["rest_us"] = _us(w.thread - calls * whole, w.frames) - sum(parts.values())
    return parts


def serial(config: str, device: str, seconds: float) -> Ceiling:
    """The serial placement's loop: sampler steps, each batch trained as it is ready and released,
    inference acting with the learner's new version (as `surge.runtime.serial` does). Two runs of
    `seconds` like `rollout_alone`'s; parts: learner_us (`LearnerLoop.train`), inference_us (the
    in-process acting), env_us, game_us, rest_us (the timed run's thread CPU outside those three:
    the rollout loop's Python, the batcher): what each role costs inside the one process, to set
    beside its cost alone."""
    c = _components(config, device)
    try:
        sampler = SerialSampler(c)
        learner = c.learners[0]
        loop = LearnerLoop(c.models[0], learner, 0)
        frame = c.info.frameskip

        def step() -> int:
            sampler.step()
            while (slots := sampler.take(0)) is not None:
                loop.train(slots, 0)
                sampler.release(slots, 0)
                c.inferences[0].policy_version = learner.policy_version
            return sum(wk.pop_env_steps() for wk in c.workers) * frame

        g0 = _children_cpu()
        plain = _run(c, seconds, step, 20, lambda: None)
        game = _children_cpu() - g0
        env, train, acting = _timed_envs(c), Timed(c), Timed(c)
        loop.train = train.wrap(loop.train)  # type: ignore[method-assign]
        sampler.acting = acting.wrap(sampler.acting)  # type: ignore[assignment]
        timed = _run(c, seconds, step, 5, lambda: (env.reset(), train.reset(), acting.reset()))
        parts = _split_thread(timed, {"learner": train, "inference": acting, "env": env}, c)
        parts["game_us"] = _us(game, plain.frames)
        return Ceiling("serial", plain.frames, plain.wall, plain.cpu, parts, plain.thread)
    finally:
        c.close()


ROLES: dict[str, Callable[[str, str, float], Ceiling]] = {
    "learner": learner_alone,
    "learner_threads": learner_threads,
    "inference": inference_alone,
    "rollout": rollout_alone,
    "serial": serial,
}


def predicted_serial(ceilings: dict[str, Ceiling], per: str = "fps_cpu") -> float:
    """The serial rate the three roles' ceilings predict: 1 / Σ 1 / ceiling (env frames/s, per CPU
    second of the process with `per="fps_cpu"`, of the thread with "fps_thread", per wall second with
    "fps_wall")."""
    return 1.0 / sum(1.0 / getattr(ceilings[r], per) for r in ("learner", "inference", "rollout"))


def measure(
    config: str, device: str = "cpu", seconds: float = 10.0, roles: tuple[str, ...] = tuple(ROLES)
) -> dict[str, Ceiling]:
    """Each role of `roles` measured alone (and the serial loop), one after the other."""
    return {role: ROLES[role](config, device, seconds) for role in roles}


def _print(config: str, res: dict[str, Ceiling], load: str) -> None:
    print(f"\n{config} (load before: {load}, after: {open('/proc/loadavg').read().split()[0]})")
    print("| role | env frames/s (wall) | env frames/s (CPU s) | CPU µs/frame | parts, CPU µs/frame |")
    print("|---|---|---|---|---|")
    for r in res.values():
        parts = ", ".join(
            f"{k.removesuffix('_us')} {v:.2f}" if k.endswith("_us") else f"{k} {v:.0f}"
            for k, v in r.parts.items()
        )
        print(f"| {r.role} | {r.fps_wall:,.0f} | {r.fps_cpu:,.0f} | {r.cpu_us:.2f} | {parts} |")
    if {"learner", "inference", "rollout", "serial"} <= res.keys():
        for per in ("fps_cpu", "fps_wall"):
            p = predicted_serial(res, per)
            print(
                f"serial from the ceilings ({per}): {p:,.0f}; measured {getattr(res['serial'], per):,.0f} "
                f"(measured / predicted {getattr(res['serial'], per) / p:.2f})"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--role", action="append", choices=sorted(ROLES), help="default: all, serial included")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per role (after a warm-up)")
    ap.add_argument("--device", default="cpu", help="--device of the model: cpu, cuda, cuda:K")
    ap.add_argument("--out", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--cuda_schedule", help="how the CPU waits for the GPU: auto, spin, yield, blocking")
    ap.add_argument(
        "--host_gather",
        action="store_true",
        help="a CUDA learner gathers its batches on the host (index_select into page-locked memory) "
        "instead of copying them from the registered buffers by DMA (surge.data.device_copy), "
        "as surge did before",
    )
    ap.add_argument(
        "--no_cuda_graphs",
        action="store_true",
        help="the inference worker runs its forward pass eagerly on a GPU (--cuda_graphs=False), as "
        "surge did before",
    )
    ap.add_argument(
        "--gpu_data_path",
        action="store_true",
        help="on the CPU: the inference worker reads and writes the buffers as on a GPU (the graphed "
        "path's static buffers, its forward pass run eagerly), for its host side",
    )
    a = ap.parse_args(argv)
    GPU_DATA_PATH[0] = a.gpu_data_path
    if a.no_cuda_graphs:
        EXTRA_FLAGS.append("--cuda_graphs=False")
    if a.host_gather:
        surge.learning.base.device_copy_for = lambda buffers, device: None  # type: ignore[assignment]
    if a.cuda_schedule:  # before any CUDA work (`gpu_timing.set_cuda_schedule`)
        set_cuda_schedule(a.cuda_schedule, torch.device(a.device).index or 0)
    torch.set_num_threads(1)
    retain_freed_memory()  # as a training run's process keeps freed memory (`surge.app.training_run`)
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    out = {}
    for name in a.config:
        load = open("/proc/loadavg").read().split()[0]
        res = measure(name, a.device, a.seconds, tuple(a.role or ROLES))
        _print(name, res, load)
        out[name] = {"load": load, "device": a.device, "roles": [r.row() for r in res.values()]}
    if a.out:
        a.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
