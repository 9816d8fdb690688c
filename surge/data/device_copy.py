"""A CUDA learner's batch copied from the trajectory buffers to the device by DMA, with no gather
on the host.

Without it, `TrajectoryBuffers.gather` copies the batch's slots into page-locked memory on the CPU
(`index_select`, one memcpy per slot and field) and that copy is then sent to the device. On the H200
that host gather was a quarter of the learner's CPU: 3.4 of 13.1 ms a batch on pong_1epoch, 6.3 of
19.4 on doom_benchmark (docs/benchmarks.md, "On a GPU").

Here the buffers' own memory is registered as page-locked once (`cudaHostRegister`, as
torch.distributed's checkpoint stager pins shared-memory tensors, `torch.cuda._pin_memory_utils`),
and each run of consecutive slots of a field is one asynchronous `cudaMemcpyAsync` straight into the
device tensor: a few calls a batch (a batch is a handful of blocks, each a run of slots) instead of a
host copy of every byte. The host-side CPU left is the calls themselves, so only fields of at least
`DMA_MIN_SLOT_BYTES` a slot go this way (observations, wide recurrent states); the small ones are
gathered as before, where one gather costs less than a copy per run.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable

import torch
from torch import Tensor

from surge.data.trajectory import TrajectoryBuffers, Tree, gather_rows, tree_leaves, tree_map

log = logging.getLogger("surge")


def slot_runs(slots: Tensor) -> list[tuple[int, int, int]]:
    """The runs of consecutive slot indices in `slots` `[N]` int64, in order:
    `(position in slots, first slot, length)` each, e.g. `[4, 5, 6, 0, 1]` ->
    `[(0, 4, 3), (3, 0, 2)]`."""
    s = slots.tolist()
    runs: list[tuple[int, int, int]] = []
    start = 0
    for i in range(1, len(s) + 1):
        if i == len(s) or s[i] != s[i - 1] + 1:
            runs.append((start, s[start], i - start))
            start = i
    return runs


#: bytes a slot of a field must hold to go by DMA: a copy call costs about 4 µs of CPU on this
#: 2-core machine (48 of them 197 µs, against 31 µs for 12 host gathers of tiny fields), about as
#: long as a host memcpy of 20-60 KiB; smaller fields are gathered on the host as before
DMA_MIN_SLOT_BYTES = 64 * 1024


def by_dma(t: Tensor) -> bool:
    """Whether the field `t` `[S, T(+1), ...]` goes by DMA: a slot of it holds at least
    `DMA_MIN_SLOT_BYTES` (an observation stack or a wide recurrent state, not a reward row)."""
    return t[0].numel() * t.element_size() >= DMA_MIN_SLOT_BYTES


def copy_runs(
    buffers: TrajectoryBuffers, slots: Tensor, device: torch.device, dma: Callable[[Tensor], bool] = by_dma
) -> dict[str, Tree]:
    """Every field of the trajectories `slots` `[N]` int64 as new tensors on `device`,
    `[N, T(+1), ...]` (what `buffers.gather(slots)` gives, on `device`). A field for which `dma`
    holds is copied by one `copy_` per run of consecutive slots (asynchronous from page-locked
    memory to a CUDA device: the caller waits for it before the slots are written again); the
    others are gathered on the host (`gather_rows`, page-locked for a CUDA device) and sent."""
    runs = slot_runs(slots)
    n = len(slots)
    pin = device.type == "cuda"

    def one(t: Tensor) -> Tensor:
        if not dma(t):
            return gather_rows(t, slots, pin).to(device, non_blocking=True)
        out = torch.empty((n, *t.shape[1:]), dtype=t.dtype, device=device)
        for pos, first, length in runs:
            out[pos : pos + length].copy_(t[first : first + length], non_blocking=True)
        return out

    return {name: tree_map(one, getattr(buffers, name)) for name in buffers.FIELDS}


def _big_leaves(buffers: TrajectoryBuffers) -> list[Tensor]:
    """The buffers' tensors that go by DMA (`by_dma`), every field's leaves in field order."""
    return [t for name in buffers.FIELDS for t in tree_leaves(getattr(buffers, name)) if by_dma(t)]


def _register(t: Tensor) -> weakref.finalize:
    """Page-locks `t`'s storage in place (`cudaHostRegister`, flag portable). Returns the undo,
    which runs once: when called, or when `t` is freed, whichever comes first.

    Raises:
        RuntimeError: the CUDA runtime refused (its error code in the message)."""
    cudart = torch.cuda.cudart()
    storage = t.untyped_storage()
    ptr, size = storage.data_ptr(), storage.nbytes()
    err = int(cudart.cudaHostRegister(ptr, size, 1))  # 1: cudaHostRegisterPortable
    if err != 0:
        clear_cuda_error()
        raise RuntimeError(f"cudaHostRegister of {size} bytes failed with cudaError {err}")
    undo = weakref.finalize(t, cudart.cudaHostUnregister, ptr)
    undo.atexit = False  # the process's end releases it, the CUDA runtime perhaps gone by then
    return undo


def clear_cuda_error(device: torch.device | str = "cuda") -> None:
    """Consumes the CUDA runtime's last error, which a failed call outside torch leaves set (a
    refused `cudaHostRegister`, a failed graph capture): torch checks it after every kernel launch
    (`C10_CUDA_KERNEL_LAUNCH_CHECK`, `cudaGetLastError`) and the next launch would raise it. torch's
    bindings have no `cudaGetLastError`; a launch consumes it."""
    try:
        torch.ones(1, device=device).add_(1)
    except RuntimeError:
        pass


class DeviceCopy:
    """Copies whole trajectories from `buffers` to `device` (see the module docstring).

    Args:
        buffers: the trajectory buffers (shared memory or not); their tensors are registered as
            page-locked in this process until `close()` or until they are freed.
        device: a CUDA device.
    Raises:
        RuntimeError: a field could not be registered (none stays registered then).
    """

    def __init__(self, buffers: TrajectoryBuffers, device: torch.device):
        # weakly: the process's cache (`device_copy_for`) must not keep the buffers alive
        self._buffers = weakref.ref(buffers)
        self.device = device
        self._undo: list[weakref.finalize] = []
        big = _big_leaves(buffers)  # only what goes by DMA is page-locked
        try:
            for t in big:
                self._undo.append(_register(t))
        except RuntimeError:
            self.close()
            raise
        #: bytes registered (the fields that go by DMA)
        self.nbytes = sum(t.numel() * t.element_size() for t in big)
        # the copy is waited for with the thread asleep, not spinning on the GPU
        self._done = torch.cuda.Event(blocking=True)

    def copy(self, slots: Tensor) -> dict[str, Tree]:
        """Every field of the trajectories `slots` `[N]` int64 as device tensors `[N, T(+1), ...]`,
        as `buffers.gather(slots)` then `.to(device)` would give them. Returns once the copies are
        complete, so the slots may be reused at once (the contract of `LearnerBase.prepare_batch`);
        the copies queue behind the device's work already issued on the current stream."""
        buffers = self._buffers()
        assert buffers is not None, "the trajectory buffers were freed"
        data = copy_runs(buffers, slots, self.device)
        self._done.record()
        self._done.synchronize()
        return data

    def close(self) -> None:
        """Unregisters the buffers' memory (idempotent); `device_copy_for` makes a new one after."""
        buffers = self._buffers()
        if buffers is not None and _COPIES.get(buffers) is self:
            del _COPIES[buffers]
        undo, self._undo = self._undo, []
        for u in undo:
            u()


_COPIES: weakref.WeakKeyDictionary[TrajectoryBuffers, DeviceCopy | None] = weakref.WeakKeyDictionary()


def device_copy_for(buffers: TrajectoryBuffers, device: torch.device) -> DeviceCopy | None:
    """This process's `DeviceCopy` of `buffers` to the CUDA `device`, made at the first call (every
    learner of the process shares it: memory is registered once). None where no field goes by DMA
    (`by_dma`: the host gather is then cheaper) or the registration failed; the learners then
    gather on the host, as without it. Logs which, once."""
    if buffers in _COPIES:
        return _COPIES[buffers]
    copier: DeviceCopy | None = None
    if not _big_leaves(buffers):
        log.info(
            "Learner: batches are gathered on the host (no field holds %d KiB a slot)",
            DMA_MIN_SLOT_BYTES // 1024,
        )
    else:
        try:
            copier = DeviceCopy(buffers, device)
            log.info(
                "Learner: batch fields of >= %d KiB a slot go to %s by DMA from the trajectory "
                "buffers (%.0f MiB registered page-locked)",
                DMA_MIN_SLOT_BYTES // 1024,
                device,
                copier.nbytes / 2**20,
            )
        except RuntimeError as e:
            log.warning(
                "Learner: batches are gathered on the host: the trajectory buffers could not be "
                "registered (%s)",
                e,
            )
    _COPIES[buffers] = copier
    return copier
