"""What a GPU role's thread spends per kernel, for `role_ceilings.py --device cuda`: how the CPU waits
for the GPU (CUDA's scheduling of a synchronisation), and the GPU's own busy time.

The cost model (`cost_model.py`) fits 58 µs of a single process's CPU per kernel on the 2026-11-28
H200 run, about 12x what launching a kernel costs. Two readings of the same figure:

- the thread spins in a synchronisation while the GPU computes (CUDA's default when a process has
  fewer active contexts than cores), so the GPU's compute shows as the thread's CPU;
- the launches themselves cost that much there.

Run the same role with `--cuda_schedule spin` and with `--cuda_schedule blocking` (the thread
sleeps in a synchronisation): if the thread's CPU per frame falls to about its host work plus 5 µs
per launch under `blocking`, the rest was waiting, and `gpu_busy_us` (the summed time of the GPU's
kernels per env frame, from torch's profiler) says how long the GPU computes for the frames.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile

#: CUDA driver API `CU_CTX_SCHED_*` flags (cuda.h): how a host thread waits for the GPU
SCHEDULES = {"auto": 0x0, "spin": 0x1, "yield": 0x2, "blocking": 0x4}


def set_cuda_schedule(mode: str, device_index: int = 0) -> None:
    """Sets how host threads wait for device `device_index` (`SCHEDULES`) on its primary context,
    which torch uses. Call it before the process's first CUDA tensor: the flags of an active
    context do not change.

    Raises:
        ValueError: `mode` is not a key of `SCHEDULES`.
        RuntimeError: the CUDA driver (libcuda.so.1) is missing, or a driver call failed (its code),
            or the primary context is already active.
    """
    if mode not in SCHEDULES:
        raise ValueError(f"cuda schedule must be one of {sorted(SCHEDULES)}, got {mode!r}")
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise RuntimeError(f"no CUDA driver to set the schedule with: {e}") from e
    dev, flags, active = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
    for name, call in (
        ("cuInit", lambda: cuda.cuInit(0)),
        ("cuDeviceGet", lambda: cuda.cuDeviceGet(ctypes.byref(dev), device_index)),
        (
            "cuDevicePrimaryCtxGetState",
            lambda: cuda.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)),
        ),
    ):
        if (err := call()) != 0:
            raise RuntimeError(f"{name} failed with CUDA error {err}")
    if active.value:
        raise RuntimeError(
            "the primary CUDA context is already active: set the schedule before any CUDA work"
        )
    if (err := cuda.cuDevicePrimaryCtxSetFlags(dev, SCHEDULES[mode])) != 0:
        raise RuntimeError(f"cuDevicePrimaryCtxSetFlags failed with CUDA error {err}")


def sync(device: torch.device) -> None:
    """Waits for `device`'s queued work (nothing to wait for off CUDA)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def gpu_busy_us(step: Callable[[], int], calls: int, device: torch.device) -> float:
    """The GPU's busy time per env frame (µs): the summed device time of the kernels and copies that
    `calls` calls of `step()` (each returns the env frames it made) put on `device`, from torch's
    profiler. NaN off CUDA."""
    if device.type != "cuda":
        return float("nan")
    sync(device)
    frames = 0
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            frames += step()
        sync(device)
    busy = 0.0
    for e in prof.key_averages():
        busy += getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0.0)
    return busy / max(frames, 1)
