"""Weights shared between the processes of the async placement, in shared memory: one
`SharedWeights` per policy holds its learner's model state as one flat float32 tensor plus its
`policy_version`; inference copies it when the version moved (once per learner iteration). The
trajectory-slot blocks are in `surge.data.block_pool`.

Writes and reads are ordered by a sequence counter (a seqlock), not a lock: the counter is odd
while the learner writes; a reader copies, then checks that the counter is even and unchanged, and
copies again otherwise. A process killed while holding a lock would leave it held forever and stall
every other process of its policy; killed while publishing, it leaves the counter odd, which
readers see (they keep the weights they have) and the main process reports when it saves what the
learner last published.
"""

from __future__ import annotations

import time

import torch
from torch import Tensor, nn


def _float_state(model: nn.Module) -> list[tuple[str, Tensor]]:
    return [(k, v) for k, v in model.state_dict().items() if v.dtype.is_floating_point]


class SharedWeights:
    """Flat copy of `model`'s floating-point state (parameters and buffers) in shared memory.

    Args:
        model: a model with the layout every process uses (only its sizes are read).
    """

    def __init__(self, model: nn.Module):
        size = sum(v.numel() for _, v in _float_state(model))
        self.flat = torch.zeros(size, dtype=torch.float32).share_memory_()
        self.version = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.seq = torch.zeros(1, dtype=torch.int64).share_memory_()  # odd while being written

    def publish(self, model: nn.Module, policy_version: int) -> None:
        """Writer side (the policy's learner, or for a frozen policy the main process: one writer
        per policy): copies the model's state and sets `policy_version`."""
        with torch.no_grad():
            self.seq[0] += 1
            offset = 0
            for _, v in _float_state(model):
                n = v.numel()
                self.flat[offset : offset + n].copy_(v.reshape(-1), non_blocking=False)
                offset += n
            self.version[0] = policy_version
            self.seq[0] += 1

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_version_view", None)  # numpy views would travel as copies, not shared
        state.pop("_seq_view", None)
        return state

    def read_seq(self) -> int:
        """The write counter: it moves with every `publish`, also one that keeps the policy_version
        (a frozen policy given other weights), so readers reload when it changed."""
        view = self.__dict__.get("_seq_view")
        if view is None:
            view = self._seq_view = self.seq.numpy()
        return view.item(0)

    def read_version(self) -> int:
        """The latest published policy_version (read before each inference batch: a numpy view's
        item, a tenth of the cost of indexing the tensor)."""
        view = self.__dict__.get("_version_view")
        if view is None:  # made in each process, on the shared tensor it received
            view = self._version_view = self.version.numpy()
        return view.item(0)

    def load_into(self, model: nn.Module, timeout: float = 1.0) -> int | None:
        """Reader side: copies a consistent shared state into `model`; returns its policy_version,
        or None when none was consistent within `timeout` seconds (a writer died mid-write, or
        keeps writing): `model` may then hold a torn copy, so callers keep their previous weights
        only where they can reload them."""
        deadline = time.monotonic() + timeout
        with torch.no_grad():
            while True:
                before = int(self.seq[0])
                if before % 2 == 0:
                    offset = 0
                    for _, v in _float_state(model):
                        n = v.numel()
                        v.copy_(self.flat[offset : offset + n].view_as(v))
                        offset += n
                    version = int(self.version[0])
                    if int(self.seq[0]) == before:
                        return version
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.0005)
