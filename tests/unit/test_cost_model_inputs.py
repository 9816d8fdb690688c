"""benchmarks/cost_model_inputs.py's operation count: counted as a CUDA run launches them, an RNN
call is one operation each way whatever its length, while this CPU's own count grows with it."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from cost_model_inputs import _count_ops  # noqa: E402

from surge.models.cores import RnnCore  # noqa: E402


class _NoRnn(torch.nn.Module):
    """The RNN's place in the graph, with no operation of its own."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return x, None


def _train_step(rnn: torch.nn.Module, head: torch.nn.Linear, T: int) -> None:
    x = torch.randn(T, 4, 8, requires_grad=True)
    out, _ = rnn(torch.tanh(x))
    head(out).sum().backward()


def _ops(rnn: torch.nn.Module, T: int, count: str) -> int:
    return _count_ops(_train_step, rnn, torch.nn.Linear(8, 1), T, count=count)[1]


def test_gpu_count_charges_an_rnn_call_one_operation_each_way_whatever_its_length():
    for T in (2, 16, 32):
        # reference: the same step without the RNN, plus cuDNN's forward and backward
        assert _ops(torch.nn.GRU(8, 8), T, "gpu") == _ops(_NoRnn(), T, "gpu") + 2
        assert _ops(torch.nn.LSTM(8, 8), T, "gpu") == _ops(_NoRnn(), T, "gpu") + 2
    cpu = [_ops(torch.nn.GRU(8, 8), T, "cpu") for T in (2, 16, 32)]
    assert cpu[0] < cpu[1] < cpu[2]  # the CPU's GRU runs step by step


def test_gpu_count_of_a_chunk_with_episode_ends_takes_the_packed_path():
    """With ends inside a chunk, the CPU runs one RNN call per time range; the count takes the one
    packed call a GPU makes, whose cost does not grow with the ends."""
    core = RnnCore(8, 8, "gru", 1)
    x = torch.randn(16, 4, 8, requires_grad=True)
    stored = torch.zeros(16, 4, 8)

    def step(dones: torch.Tensor) -> None:
        core.zero_grad(set_to_none=True)  # a first backward, not an accumulation, every time
        x.grad = None
        core.sequence(x, stored, dones, 16).sum().backward()

    few, many = torch.zeros(16, 4), torch.zeros(16, 4)
    few[3, 0] = 1.0  # 2 time ranges on the CPU
    for t in (1, 3, 5, 7, 9, 11, 13):  # 8 time ranges
        many[t, t % 4] = 1.0
    assert _count_ops(step, few, count="gpu")[1] == _count_ops(step, many, count="gpu")[1]
    assert _count_ops(step, few, count="cpu")[1] < _count_ops(step, many, count="cpu")[1]


def test_gpu_count_takes_the_estimators_recurrence_as_a_gpu_runs_it():
    """On the CPU the recurrence runs over numpy views and dispatches nothing; the GPU count takes
    the path a GPU runs (one table and one reduction), whose operations do not grow with T."""
    from surge.learning.returns import gae

    def ops(T: int, count: str) -> int:
        r, v, d = torch.randn(T, 4), torch.randn(T + 1, 4), torch.zeros(T, 4)
        return _count_ops(gae, r, v, d, 0.99, 0.95, count=count)[1]

    ops(8, "gpu"), ops(32, "gpu")  # a T's first call also makes the scan's masks (kept after)
    assert ops(8, "gpu") == ops(32, "gpu") > ops(32, "cpu") + 5


def test_dma_host_times_both_paths_and_counts_the_large_fields_and_runs():
    from cost_model_inputs import _dma_host

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from filled_buffers import filled_buffers

    from surge.data import device_copy

    # a 40x40x40 uint8 image of 5 steps a slot holds 320,000 bytes (>= 64 KiB): it goes by DMA, the
    # recurrent state, rewards and the rest are gathered
    buf = filled_buffers(8, rollout=4, img=(40, 40, 40))
    slots = torch.tensor([5, 6, 0, 1, 2, 7])
    calls = []
    copy = device_copy.copy_runs
    device_copy.copy_runs = lambda b, s, d: calls.append(d) or copy(b, s, d)  # type: ignore[assignment]
    try:
        dma_s, gather_s, leaves, runs = _dma_host(buf, slots)
    finally:
        device_copy.copy_runs = copy
    assert (leaves, runs) == (1, 3)  # [5, 6], [0, 1, 2], [7]
    assert calls == [torch.device("meta")]  # no byte moved: the copies' host side only
    assert dma_s > 0 and gather_s > 0
