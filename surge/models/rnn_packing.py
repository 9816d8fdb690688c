"""Packing a batch of trajectories with episode ends and BPTT chunk starts inside into one
`PackedSequence`, so that an RNN runs over all of it in one call (one cuDNN call each way on a
GPU) instead of one call per time step.

The idea is Sample Factory's (`sample_factory/algo/utils/rnn_utils.py`, `build_rnn_inputs`): a
trajectory column is cut into segments wherever its recurrent state does not simply carry on, the
segments are sorted by length and laid out time-major as `nn.utils.rnn.PackedSequence` expects.
Here a segment starts at every BPTT chunk start (`t % recurrence == 0`, state from the stored
behavior state) and after every episode end (`dones[t-1] == 1`, state from zeros).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


@dataclass(frozen=True)
class PackPlan:
    """Where each row of a `[T, B]` batch goes in the packed layout, and back.

    - `gather`: `[T*B]` int64, the flat row (`t*B + b`) that goes to each packed position.
    - `scatter`: `[T*B]` int64, the packed position of each flat row (the inverse permutation).
    - `batch_sizes`: `[max segment length]` int64 on the CPU, segments still running at each step
      (`PackedSequence.batch_sizes`).
    - `first_rows`: `[S]` int64, the flat row of each segment's first step, longest segment first.
    - `from_stored`: `[S]` bool, True where that segment starts at a chunk start (its state is the
      stored one), False after an episode end (zeros).
    """

    gather: Tensor
    scatter: Tensor
    batch_sizes: Tensor
    first_rows: Tensor
    from_stored: Tensor


def plan_packing(dones: np.ndarray, recurrence: int) -> PackPlan:
    """The packing of a `[T, B]` batch.

    Args:
        dones: `[T, B]` array, nonzero where the episode ended at that step.
        recurrence: BPTT chunk length in steps; a segment also starts at every multiple of it.
    Returns:
        a `PackPlan` with CPU tensors.
    """
    T, B = dones.shape
    starts = np.zeros((T, B), dtype=bool)
    starts[::recurrence] = True
    starts[1:] |= dones[:-1] != 0
    # column-major order (b, t): a segment is a run of one column
    col = starts.T.reshape(-1)
    seg_of = np.cumsum(col) - 1  # [B*T], segment id of each (b, t)
    first = np.flatnonzero(col)  # [S], column-major position of each segment's first step
    lengths = np.diff(np.append(first, T * B))
    order = np.argsort(-lengths, kind="stable")  # segments, longest first
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    batch_sizes = np.bincount(lengths, minlength=int(lengths.max()) + 1)[::-1].cumsum()[::-1][1:]
    step_offset = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]])
    pos_cm = np.arange(T * B)
    k = pos_cm - first[seg_of]  # step within its segment
    packed_pos = step_offset[k] + rank[seg_of]  # [B*T], column-major
    b_idx, t_idx = np.divmod(pos_cm, T)
    flat = t_idx * B + b_idx
    scatter = np.empty(T * B, dtype=np.int64)
    scatter[flat] = packed_pos
    gather = np.empty(T * B, dtype=np.int64)
    gather[packed_pos] = flat
    first_b, first_t = np.divmod(first[order], T)
    return PackPlan(
        gather=torch.from_numpy(gather),
        scatter=torch.from_numpy(scatter),
        batch_sizes=torch.from_numpy(batch_sizes.astype(np.int64)),
        first_rows=torch.from_numpy((first_t * B + first_b).astype(np.int64)),
        from_stored=torch.from_numpy(first_t % recurrence == 0),
    )
