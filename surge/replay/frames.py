"""Frame-based observation storage: each frame of a stacked-frame observation is stored once.

An Atari observation of surge's Atari family is a stack `[F, 84, 84]` uint8 whose LAST channel is
the newest frame (`gymnasium.wrappers.FrameStackObservation`, oldest first), and whose first
observation after a reset repeats the reset frame F times (`padding_type="reset"`, gymnasium's
default, which `surge.envs.atari` uses). Consecutive observations of an episode share F-1 frames, so
storing the whole stack per step (as SB3's ReplayBuffer does, with `optimize_memory_usage` halving
it) costs F frames per transition; here each row keeps only the newest frame, `[capacity, columns,
84, 84]`, about one frame (7,056 bytes) per transition, as rlpyt's `FrameBufferMixin` (Mnih et al.
2015's DQN replay does the same).

At sampling the stack of row t is rebuilt from rows t-F+1 .. t of its column. Frames before the
episode's first observation are NOT zeroed (rlpyt zeroes them): they repeat the episode's first
frame, because that is what FrameStackObservation showed the agent, so a rebuilt stack equals the
observation the agent acted on, bit for bit (tests/unit/test_replay_frames.py checks this on a real
ALE game through surge's wrappers).

Per row, `hist[t]` int8 says how far back the stack may reach: 0..F-1 rows (F-1 = a full history;
less when the episode started within the last F-1 rows, the earlier frames repeating its first
one); negative when the frames before are unknown: the first block of a column, or one that does not
continue the column's previous block, whose first observation is not a reset stack (F equal
frames). Its older frames were never stored, so rows until F-1 steps later are not sampleable
(`valid` is False); their own newest frames are stored and serve the rows after them. A row is also
not sampleable once the ring has overwritten the rows its stack needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor


class FrameObs:
    """Stores the newest frame of each stacked observation `[F, H, W]` (any dtype; Atari uint8).

    Args:
        capacity, num_columns: the ring's shape (`RingStore`).
        frame_stack: F, the frames per observation.
    Raises:
        ValueError: frame_stack < 1.
    """

    def __init__(self, capacity: int, num_columns: int, frame_stack: int):
        if frame_stack < 1:
            raise ValueError(f"frame_stack must be >= 1, got {frame_stack}")
        self.capacity, self.num_columns, self.F = capacity, num_columns, frame_stack
        self.history = frame_stack - 1
        self.frames: Tensor | None = None
        self.hist = torch.full((capacity, num_columns), -frame_stack, dtype=torch.int8)

    def check(self, obs: Any) -> None:
        """Raises ValueError unless obs is a tensor `[T+1, N, F, ...]`."""
        if not isinstance(obs, Tensor) or obs.dim() < 3 or obs.shape[2] != self.F:
            shape = getattr(obs, "shape", type(obs))
            raise ValueError(f"frame storage needs obs [T+1, N, {self.F}, ...], got {shape}")

    def write(
        self, ring: Any, rows: Tensor, cols: Tensor, obs: Any, episode_start: Tensor, stream_start: Tensor
    ) -> None:
        """See `surge.replay.obs_store`. obs `[T+1, n, F, H, W]`.

        Raises:
            ValueError: obs is a dict or its stack is not F frames.
        """
        self.check(obs)
        self.check_stacks(obs, episode_start)
        F = self.F
        if self.frames is None:
            self.frames = torch.zeros(self.capacity, self.num_columns, *obs.shape[3:], dtype=obs.dtype)
        flat = (rows * self.num_columns + cols[None]).reshape(-1).numpy()
        self._flat_frames()[flat] = obs[:, :, -1].reshape(flat.size, -1).numpy()
        # h0: the stack reach of row 0, from the column's pending row or, for a new stream, from obs[0]
        first = obs[0]
        reset_like = (first == first[:, -1:]).reshape(first.shape[0], -1).all(1)
        fresh = torch.where(reset_like, 0, -F).to(torch.int64)
        h0 = torch.where(stream_start, fresh, self.hist[rows[0], cols].to(torch.int64))
        s = torch.arange(rows.shape[0])[:, None]
        start = episode_start.clone()
        start[0] = False
        last = torch.where(start, s, torch.zeros_like(s)).cummax(0).values  # last episode start <= s
        in_block = last > 0
        h_ep = (s - last).clamp(max=F - 1)
        h_carry_known = (h0[None] + s).clamp(max=F - 1)
        d_unknown = h0[None] + F + s  # rows since an unknown-history stream start
        h_carry_unknown = torch.where(d_unknown >= F - 1, F - 1, d_unknown - F)
        h_carry = torch.where(h0[None] >= 0, h_carry_known, h_carry_unknown)
        self.hist[rows, cols[None]] = torch.where(in_block, h_ep, h_carry).to(torch.int8)

    def check_stacks(self, obs: Tensor, episode_start: Tensor) -> None:
        """Checks that a block's observations `[T+1, n, F, ...]` are the frame stacks this storage
        rebuilds: each observation shares F-1 frames with the one before it (shifted by one), and
        an episode's first observation (`episode_start` `[T+1, n]` bool, row 0 excluded) repeats its
        newest frame F times. A stack of another kind (zero-padded after a reset, newest frame
        first, frames skipped) would otherwise be rebuilt wrong without a sign.

        Raises:
            ValueError: a pair of observations that breaks either rule, with where it is.
        """
        if self.F < 2 or obs.shape[0] < 2:
            return
        o = obs.numpy()
        T, n = o.shape[0] - 1, o.shape[1]
        starts = episode_start[1:].numpy()
        shifted = (o[1:, :, :-1] == o[:-1, :, 1:]).reshape(T, n, -1).all(-1)
        bad = ~shifted & ~starts
        t_idx, c_idx = np.nonzero(starts)
        if t_idx.size:
            first = o[t_idx + 1, c_idx]
            bad[t_idx, c_idx] = ~(first == first[:, -1:]).reshape(t_idx.size, -1).all(-1)
        if bad.any():
            t, c = (int(v[0]) for v in np.nonzero(bad))
            what = (
                "an episode's first observation does not repeat its frame"
                if starts[t, c]
                else ("it does not share its first frames with the observation before it")
            )
            raise ValueError(
                f"observation {t + 1} of trajectory {c} in a replay block is not a stack of {self.F} "
                f"frames as frame storage rebuilds them ({what}); the env family declares frame "
                "stacks that its observations are not: pass --replay_frame_storage=False"
            )

    def read(self, rows: Tensor, cols: Tensor) -> Tensor:
        """Rebuilt stacks `[*rows.shape, F, H, W]` (oldest frame first)."""
        assert self.frames is not None
        r, c = rows.numpy(), cols.numpy()
        reach = np.maximum(self.hist.numpy()[r, c], 0)[..., None].astype(np.int64)  # [..., 1]
        back = np.arange(self.F - 1, -1, -1)  # frame f is F-1-f rows back
        src = (r[..., None] - np.minimum(back, reach)) % self.capacity
        flat = (src * self.num_columns + c[..., None]).reshape(-1)
        out = torch.from_numpy(self._flat_frames()[flat])
        return out.view(*src.shape, *self.frames.shape[2:])

    def _flat_frames(self) -> Any:
        """The frames as a numpy view `[capacity * columns, H * W]` (same memory). numpy's row
        gather and scatter are about 10x faster than torch's indexing for uint8 rows on CPU
        (1.4 ms vs 17 ms to scatter 1,032 Atari frames, measured on the 2-core dev machine)."""
        assert self.frames is not None
        return self.frames.view(self.capacity * self.num_columns, -1).numpy()

    def valid(self, ring: Any, rows: Tensor, cols: Tensor) -> Tensor:
        """`[*rows.shape]` bool: the stack of each row can be rebuilt (its reach is known and no row
        it needs has been overwritten)."""
        r, c = rows.numpy(), cols.numpy()
        reach = self.hist.numpy()[r, c].astype(np.int64)
        obs_age = (ring.head.numpy()[c] - r) % self.capacity  # 0 = the pending (bootstrap) row
        return torch.from_numpy((reach >= 0) & (obs_age + reach <= ring.count.numpy()[c]))

    def nbytes(self) -> int:
        frames = 0 if self.frames is None else self.frames.numel() * self.frames.element_size()
        return frames + self.hist.numel()

    def state_dict(self) -> dict[str, Any]:
        return {"frames": self.frames, "hist": self.hist}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.frames, self.hist = state["frames"], state["hist"]
