"""n-step returns read from the ring (Mnih et al. 2016 / Hessel et al. 2018 "Rainbow", eq. 2;
rlpyt's `n_step_return`), with terminated and truncated kept apart.

For a sampled step t of column c, the window is the steps t .. t+L-1 with L <= n: it stops after n
steps or at the first step that ends the episode, whichever comes first, and never reaches a step
not yet written:

    G_t^(n) = sum_{k=0}^{L-1} gamma^k r_{t+k}
    target  = G_t^(n) + discount * Q(next_obs),  discount = gamma^L, or 0 when step t+L-1 TERMINATED

next_obs is the observation after the window, obs_{t+L}; when step t+L-1 was TRUNCATED it is that
step's own observation obs_{t+L-1} (surge does not store a truncated episode's final observation,
`surge.replay.ring`), still with discount gamma^L.

A step is sampleable when it is written and active, every step of its window is active, and the
window is complete: n steps are written, or it ends with the episode. So the newest n-1 steps of a
column are not sampleable until the steps after them arrive (unless their episode ended).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from surge.replay.ring import RingStore


@dataclass
class Window:
    """The n-step window of each sampled step, all `[B]`: valid (bool), returns (float32),
    discounts (float32), n_steps (int64, L), next_rows (int64, the ring row of next_obs)."""

    valid: Tensor
    returns: Tensor
    discounts: Tensor
    n_steps: Tensor
    next_rows: Tensor


def n_step_window(ring: RingStore, rows: Tensor, cols: Tensor, n: int, gamma: float) -> Window:
    """The n-step windows of steps `rows`, `cols` (`[B]` int64 each); see the module docstring.
    Vectorised over `[n, B]` with numpy views of the ring (numpy's small gathers cost a fraction of
    torch's per-call overhead on CPU); observations are checked by the ring's observation store
    too (a frame stack whose history was overwritten is not sampleable)."""
    C, N = ring.capacity, ring.num_columns
    r, c = rows.numpy(), cols.numpy()
    count = ring.count.numpy()[c]
    age = (ring.head.numpy()[c] - 1 - r) % C
    k = np.arange(n)[:, None]
    flat = ((r[None] + k) % C) * N + c[None]  # [n, B]
    term = ring.terminated.numpy().reshape(-1)[flat]
    trunc = ring.truncated.numpy().reshape(-1)[flat]
    written = k <= age[None]
    done = (term | trunc) & written
    ended_before = (np.cumsum(done, 0) - done) > 0
    inside = written & ~ended_before
    ends = (done & inside).any(0)
    L = inside.sum(0)
    active = (ring.is_active.numpy().reshape(-1)[flat] | ~inside).all(0)
    valid = (age < count) & (ends | (age >= n - 1)) & active
    rewards = ring.rewards.numpy().reshape(-1)[flat].astype(np.float64)
    returns = np.where(inside, rewards * gamma ** k.astype(np.float64), 0.0).sum(0)
    last = np.maximum(L - 1, 0)
    term_last = ends & np.take_along_axis(term, last[None], 0)[0]
    trunc_last = ends & ~term_last
    discounts = np.where(term_last, 0.0, gamma ** L.astype(np.float64))
    next_rows = torch.from_numpy((r + L - trunc_last) % C)
    valid_t = torch.from_numpy(valid)
    if ring.obs.history:
        valid_t &= ring.obs.valid(ring, rows, cols) & ring.obs.valid(ring, next_rows, cols)
    return Window(
        valid_t,
        torch.from_numpy(returns.astype(np.float32)),
        torch.from_numpy(discounts.astype(np.float32)),
        torch.from_numpy(L.astype(np.int64)),
        next_rows,
    )
