"""Prioritized replay with n-step returns (Schaul et al. 2016; rlpyt's PrioritizedReplayBuffer):
a `UniformReplay` ring whose steps are drawn in proportion to `p^alpha` from a sum tree
(`surge.replay.priorities`), one leaf per ring cell (`row * num_columns + column`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from surge.replay.n_step import n_step_window
from surge.replay.priorities import Priorities
from surge.replay.ring import Appended
from surge.replay.samples import TransitionSample
from surge.replay.uniform import UniformReplay


class PrioritizedReplay(UniformReplay):
    """Args: as `UniformReplay`, plus alpha, beta0, beta_steps (env steps) and eps of `Priorities`.

    Raises:
        ValueError: as `UniformReplay` and `check_per_args`; capacity < T + n_step + frame history + 1
            at the first append.
    """

    def __init__(
        self,
        capacity: int,
        num_columns: int,
        n_step: int = 1,
        gamma: float = 0.99,
        frame_stack: int = 0,
        alpha: float = 0.6,
        beta0: float = 0.4,
        beta_steps: int = 1_000_000,
        eps: float = 1e-6,
    ):
        super().__init__(capacity, num_columns, n_step, gamma, frame_stack)
        self.priorities = Priorities(capacity * num_columns, alpha, beta0, beta_steps, eps)

    def append(self, block: dict[str, Any], columns: Tensor, new_episode: Tensor | None = None) -> Appended:
        """Stores a block (`RingStore.append`) and refreshes the priorities of the steps whose
        sampleability it changed: the new steps (max priority when sampleable), the n-1 before them
        (their windows complete now), the pending row and the rows whose frame history it overwrote
        (priority 0)."""
        ring = self.ring
        H = ring.obs.history
        if self.n_step + 1 + H + block["rewards"].shape[0] > ring.capacity:
            raise ValueError(
                f"capacity {ring.capacity} is too small for blocks of {block['rewards'].shape[0]} steps with "
                f"n_step={self.n_step} and {H} history frames"
            )
        a = super().append(block, columns, new_episode)
        off = torch.arange(-(self.n_step - 1), a.T + 1 + H)[:, None]
        rows = (a.old_head[None] + off) % ring.capacity
        cols = a.columns[None].expand_as(rows)
        r, c = rows.reshape(-1), cols.reshape(-1)
        valid = n_step_window(ring, r, c, self.n_step, self.gamma).valid
        fresh = ((off >= 0) & (off < a.T)).expand_as(rows).reshape(-1)
        leaves = (r * ring.num_columns + c).numpy()
        self.priorities.refresh(leaves, valid.numpy(), fresh.numpy())
        return a

    def sample(
        self, batch_size: int, generator: torch.Generator | None = None, env_steps: int = 0
    ) -> TransitionSample:
        """`batch_size` steps drawn with probability `P(i)` (eq. 1), with replacement.

        Args:
            env_steps: the run's env steps now, for beta's annealing.
        Returns:
            `UniformReplay.sample`'s `TransitionSample` with is_weights `[B]` float32 (eq. 2, max 1).
        Raises:
            ValueError: nothing sampleable yet.
        """
        leaves, p_alpha = self.priorities.draw(batch_size, generator)
        idx = torch.from_numpy(leaves)
        rows, cols = idx // self.ring.num_columns, idx % self.ring.num_columns
        w = n_step_window(self.ring, rows, cols, self.n_step, self.gamma)
        out = self.gather(rows, cols, w)
        out.is_weights = self.priorities.is_weights(p_alpha, env_steps)
        return out

    def update_priorities(self, indices: Tensor, td_errors: Tensor) -> None:
        """Sets the priority of sampled steps `indices` `[B]` int64 to `|td_errors| + eps` (`[B]`
        float). Steps no longer sampleable are left out.

        Raises:
            ValueError: a non-finite TD error.
        """
        td = np.abs(td_errors.detach().cpu().double().numpy().reshape(-1))
        self.priorities.update(indices.cpu().numpy(), td + self.priorities.eps)

    def state_dict(self) -> dict[str, Any]:
        d = super().state_dict()
        d["priorities"] = self.priorities.state_dict()
        return d

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.priorities.load_state_dict(state["priorities"])
