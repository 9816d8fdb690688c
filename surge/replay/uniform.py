"""Uniform replay with n-step returns (SB3's ReplayBuffer, rlpyt's UniformReplayBuffer): every
sampleable step of every column equally likely."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from surge.replay.n_step import Window, n_step_window
from surge.replay.ring import Appended, RingStore
from surge.replay.samples import TransitionSample

#: rounds of rejection sampling before `sample` gives up
MAX_ROUNDS = 64


class UniformReplay:
    """A replay ring (`RingStore`) sampled uniformly over its sampleable steps (`surge.replay.n_step`).

    Args:
        capacity: rows per column; the buffer holds up to `(capacity - 1) * num_columns` steps.
        num_columns: env-agent streams (one per actor of the sampler).
        n_step: n of the n-step return (1 = one-step TD).
        gamma: discount.
        frame_stack: 0, or F to store stacked-frame observations one frame per step (`frames`).
    Raises:
        ValueError: n_step < 1, gamma outside [0, 1], or a bad capacity (`RingStore`).
    """

    def __init__(
        self, capacity: int, num_columns: int, n_step: int = 1, gamma: float = 0.99, frame_stack: int = 0
    ):
        if n_step < 1:
            raise ValueError(f"n_step must be >= 1, got {n_step}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.ring = RingStore(capacity, num_columns, frame_stack)
        self.n_step, self.gamma = int(n_step), float(gamma)

    def append(self, block: dict[str, Any], columns: Tensor, new_episode: Tensor | None = None) -> Appended:
        """Stores a block `[T, n]` (`RingStore.append`, which lists its fields and errors)."""
        return self.ring.append(block, columns, new_episode)

    def __len__(self) -> int:
        """Steps stored (some of them not sampleable yet, see `surge.replay.n_step`)."""
        return self.ring.num_steps()

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> TransitionSample:
        """`batch_size` steps drawn uniformly, with replacement, among the sampleable ones (by
        rejection from uniform draws over the written rows of the columns that have data: exactly
        uniform over the accepted set). Tensors are on the CPU; the learner moves them.

        Returns:
            a `TransitionSample` (its fields' shapes and dtypes there) of is_weights 1, without
            lag and td_errors.
        Raises:
            ValueError: no step is sampleable after `MAX_ROUNDS` rounds of draws.
        """
        ring = self.ring
        need, got_r, got_c = batch_size, [], []
        started = torch.nonzero(ring.started).reshape(-1)
        proposed = accepted = 0
        for _ in range(MAX_ROUNDS):
            if need <= 0 or started.numel() == 0:
                break
            # propose enough to finish in about one round at the acceptance rate seen so far
            p = max(accepted / proposed, 1e-3) if proposed else 0.5
            m = min(int(1.5 * need / p) + 16, 1 << 20)
            r = torch.randint(ring.high_water, (m,), generator=generator)
            c = started[torch.randint(started.numel(), (m,), generator=generator)]
            ok = n_step_window(ring, r, c, self.n_step, self.gamma).valid
            proposed, accepted = proposed + m, accepted + int(ok.sum())
            r, c = r[ok][:need], c[ok][:need]
            got_r.append(r)
            got_c.append(c)
            need -= r.numel()
        if need > 0:
            raise ValueError(
                f"the replay has too few sampleable steps ({len(self)} stored): wait for more "
                "(learning starts later) before sampling"
            )
        rows, cols = torch.cat(got_r), torch.cat(got_c)
        return self.gather(rows, cols, n_step_window(ring, rows, cols, self.n_step, self.gamma))

    def gather(self, rows: Tensor, cols: Tensor, w: Window) -> TransitionSample:
        """The sample of steps `rows`, `cols` `[B]` with their windows (see `sample`), is_weights 1."""
        ring = self.ring
        assert ring.actions is not None
        return TransitionSample(
            obs=ring.obs.read(rows, cols),
            actions=ring.actions[rows, cols],
            returns=w.returns,
            next_obs=ring.obs.read(w.next_rows, cols),
            discounts=w.discounts,
            n_steps=w.n_steps,
            rows=rows,
            columns=cols,
            indices=rows * ring.num_columns + cols,
            is_weights=torch.ones(rows.shape[0]),
        )

    def state_dict(self) -> dict[str, Any]:
        """The whole buffer (tensors shared, not copied); `surge.replay.persist` saves it."""
        return {
            "kind": type(self).__name__,
            "n_step": self.n_step,
            "gamma": self.gamma,
            "ring": self.ring.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Raises ValueError for a state of another kind, n_step or shape."""
        if state["kind"] != type(self).__name__ or state["n_step"] != self.n_step:
            raise ValueError(
                f"saved replay is a {state['kind']} with n_step={state['n_step']}, this one {type(self).__name__} with {self.n_step}"
            )
        self.ring.load_state_dict(state["ring"])
