"""benchmarks/gpu_timing.py: how a GPU role's thread waits for the GPU and the GPU's busy time, the
tools that tell the cost model's per-kernel time apart (spin-wait or launch). Its CUDA side runs on a
lent GPU (`tests/integration/test_cuda.py`); here, what it refuses and reports off CUDA."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from gpu_timing import SCHEDULES, gpu_busy_us, set_cuda_schedule  # noqa: E402


def test_an_unknown_schedule_is_refused_naming_the_valid_ones():
    with pytest.raises(ValueError, match="blocking"):
        set_cuda_schedule("fast")


def test_the_schedules_are_the_cuda_drivers_flags():
    # cuda.h: CU_CTX_SCHED_AUTO 0x00, _SPIN 0x01, _YIELD 0x02, _BLOCKING_SYNC 0x04
    assert SCHEDULES == {"auto": 0, "spin": 1, "yield": 2, "blocking": 4}


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_without_a_gpu_there_is_no_busy_time_and_no_schedule_to_set():
    calls = []
    assert math.isnan(gpu_busy_us(lambda: calls.append(1) or 10, 3, torch.device("cpu")))
    assert calls == []  # nothing was run for it
    with pytest.raises(RuntimeError):
        set_cuda_schedule("blocking")
