"""`surge.data.device_copy`: a CUDA learner's batch copied straight from the trajectory buffers, one
copy per run of consecutive slots. The run logic and the copies are checked here on the CPU against
a naive loop over slots; registration and the DMA themselves run in `tests/integration/test_cuda.py`
(a lent GPU)."""

import numpy as np
import torch

from surge.data.device_copy import by_dma, copy_runs, slot_runs
from tests.filled_buffers import filled_buffers


def _naive_runs(slots: list[int]) -> list[tuple[int, int, int]]:
    """The reference: walk the slots, start a new run wherever one is not its predecessor + 1."""
    runs: list[list[int]] = []
    for pos, s in enumerate(slots):
        if runs and s == runs[-1][1] + runs[-1][2]:
            runs[-1][2] += 1
        else:
            runs.append([pos, s, 1])
    return [tuple(r) for r in runs]  # type: ignore[misc]


def test_slot_runs_splits_the_slots_where_they_stop_being_consecutive():
    assert slot_runs(torch.tensor([4, 5, 6, 0, 1])) == [(0, 4, 3), (3, 0, 2)]
    assert slot_runs(torch.tensor([3])) == [(0, 3, 1)]
    assert slot_runs(torch.tensor([2, 1, 0])) == [(0, 2, 1), (1, 1, 1), (2, 0, 1)]  # descending: no run
    g = np.random.default_rng(0)
    for _ in range(200):
        blocks = g.permutation(12)[: g.integers(1, 12)]  # blocks of 4 slots, in any order
        slots = [int(b) * 4 + k for b in blocks for k in range(4)]
        assert slot_runs(torch.tensor(slots)) == _naive_runs(slots)


def test_only_fields_of_64_kib_a_slot_or_more_go_by_dma():
    pong = filled_buffers(2, rollout=32, img=(4, 84, 84))  # 33 x 28224 bytes a slot
    small = filled_buffers(2, rollout=4, img=(3, 4, 5))
    assert by_dma(pong.obs["img"]) and not by_dma(small.obs["img"])
    assert not any(by_dma(getattr(pong, n)) for n in pong.FIELDS if n != "obs")  # rewards, flags, logits


def test_copy_runs_gives_what_gather_gives_for_any_slots():
    for buf in (filled_buffers(16), filled_buffers(16, img=(3, 72, 128))):  # no field by DMA; obs by DMA
        for dma in (by_dma, lambda t: True):  # the split by size; every field by runs
            for slots in ([4, 5, 6, 7, 0, 1, 2, 3], [9], [15, 3, 4, 11, 12, 13], list(range(16))):
                idx = torch.tensor(slots)
                got, ref = copy_runs(buf, idx, torch.device("cpu"), dma), buf.gather(idx)
                for name in buf.FIELDS:
                    for key in ref[name] if isinstance(ref[name], dict) else [None]:
                        out = got[name][key] if key else got[name]
                        expected = ref[name][key] if key else ref[name]
                        assert out.dtype == expected.dtype and torch.equal(out, expected), (slots, name, key)
                src = buf.obs["img"]
                assert got["obs"]["img"].untyped_storage().data_ptr() != src.untyped_storage().data_ptr()
