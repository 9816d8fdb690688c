"""Weights shared between the processes of the async placement, in shared memory: one
`SharedWeights` per policy holds its learner's model state as one flat float32 tensor plus its
`policy_version`; inference copies it when the version moved (under a lock, once per learner
iteration). The trajectory-slot blocks are in `surge.data.block_pool`."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn


def _float_state(model: nn.Module) -> list[tuple[str, Tensor]]:
    return [(k, v) for k, v in model.state_dict().items() if v.dtype.is_floating_point]


class SharedWeights:
    """Flat copy of `model`'s floating-point state (parameters and buffers) in shared memory.

    Args:
        model: a model with the layout every process uses (only its sizes are read).
        lock: a multiprocessing lock (from the spawn context).
    """

    def __init__(self, model: nn.Module, lock: Any):
        size = sum(v.numel() for _, v in _float_state(model))
        self.flat = torch.zeros(size, dtype=torch.float32).share_memory_()
        self.version = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.lock = lock

    def publish(self, model: nn.Module, policy_version: int) -> None:
        """Learner side: copies the model's state and sets `policy_version`."""
        with torch.no_grad(), self.lock:
            offset = 0
            for _, v in _float_state(model):
                n = v.numel()
                self.flat[offset : offset + n].copy_(v.reshape(-1), non_blocking=False)
                offset += n
            self.version[0] = policy_version

    def read_version(self) -> int:
        return int(self.version[0])

    def load_into(self, model: nn.Module) -> int:
        """Inference side: copies the shared state into `model`; returns its policy_version."""
        with torch.no_grad(), self.lock:
            offset = 0
            for _, v in _float_state(model):
                n = v.numel()
                v.copy_(self.flat[offset : offset + n].view_as(v))
                offset += n
            return int(self.version[0])
