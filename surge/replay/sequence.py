"""Sequence replay for recurrent agents (Kapturowski et al. 2019, "Recurrent Experience Replay in
Distributed Reinforcement Learning", R2D2; rlpyt's PrioritizedSequenceReplayBuffer).

Sequences of `burn_in + learn_len + lookahead` steps start at ring rows that are multiples of
`stride` (R2D2: 80-step sequences, 40 of burn-in, adjacent ones overlapping by 40 steps, so
`stride=40`), and carry the recurrent state stored when their first step was acted on (R2D2's
"stored state" strategy, refreshed by burn-in). They continue across the blocks of a column
(`surge.replay.ring`: one ring per env-agent column, each block continuing the last unless the
caller says it does not) and across episode ends as rlpyt's do: the episode's end is in
`terminated`/`truncated` and `episode`, and the learner resets the recurrent state there as
surge's models do on `dones`. A cut (a column whose worker was replaced) is stored as a truncation,
so nothing carries state across it. `lookahead` extra steps let the learner form n-step targets
for the last learning steps (rlpyt samples `T + n_step_return`).

Priorities: one per sequence start, mixed from the absolute TD errors of its learning steps as
`p = eta * max_i |delta_i| + (1 - eta) * mean_i |delta_i|` (R2D2, section 2.3, eta = 0.9), then
PER's `p^alpha` and importance weights (`surge.replay.priorities`); alpha = 0 samples uniformly.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from surge.replay.priorities import Priorities
from surge.replay.ring import Appended, RingStore
from surge.replay.samples import SequenceSample


def mixed_priority(td_errors: Tensor, eta: float = 0.9, mask: Tensor | None = None) -> Tensor:
    """R2D2's sequence priority `eta * max|td| + (1 - eta) * mean|td|` over time.

    Args:
        td_errors: `[L, B]` float, TD errors of the learning steps of B sequences.
        mask: `[L, B]` bool, the steps that count (default all); a sequence with none gets 0.
    Returns:
        `[B]` float64.
    """
    td = td_errors.detach().double().abs()
    m = torch.ones_like(td, dtype=torch.bool) if mask is None else mask.bool()
    n = m.sum(0)
    mx = torch.where(m, td, 0.0).amax(0)
    mean = torch.where(m, td, 0.0).sum(0) / n.clamp(min=1)
    return torch.where(n > 0, eta * mx + (1.0 - eta) * mean, 0.0)


class SequenceReplay:
    """Args:
        capacity: rows per column, a multiple of `stride`.
        num_columns: env-agent streams.
        burn_in, learn_len, lookahead: steps of a sequence (burn-in refreshes the stored state,
            the learner trains on learn_len steps, lookahead extends them for n-step targets).
        stride: rows between sequence starts (learn_len + burn_in for no overlap).
        frame_stack: 0, or F for frame-based observations (`surge.replay.frames`).
        alpha, beta0, beta_steps, eps: `surge.replay.priorities.Priorities`.
        eta: R2D2's max/mean mix.
    Raises:
        ValueError: a length < 0 (learn_len, stride < 1), capacity not a multiple of stride, eta
            outside [0, 1], or the PER arguments (`check_per_args`).
    """

    def __init__(
        self,
        capacity: int,
        num_columns: int,
        burn_in: int,
        learn_len: int,
        stride: int,
        lookahead: int = 0,
        frame_stack: int = 0,
        alpha: float = 0.9,
        beta0: float = 0.6,
        beta_steps: int = 0,
        eps: float = 1e-6,
        eta: float = 0.9,
    ):
        if burn_in < 0 or lookahead < 0 or learn_len < 1 or stride < 1:
            raise ValueError(
                f"need burn_in, lookahead >= 0, learn_len, stride >= 1; got {burn_in}, {lookahead}, {learn_len}, {stride}"
            )
        if capacity % stride:
            raise ValueError(f"capacity {capacity} must be a multiple of stride {stride}")
        if not 0.0 <= eta <= 1.0:
            raise ValueError(f"eta must be in [0, 1], got {eta}")
        self.ring = RingStore(capacity, num_columns, frame_stack)
        self.burn_in, self.learn_len, self.lookahead, self.stride = burn_in, learn_len, lookahead, stride
        self.seq_len = burn_in + learn_len + lookahead
        self.eta = float(eta)
        self.priorities = Priorities((capacity // stride) * num_columns, alpha, beta0, beta_steps, eps)

    def __len__(self) -> int:
        return self.ring.num_steps()

    def append(self, block: dict[str, Any], columns: Tensor, new_episode: Tensor | None = None) -> Appended:
        """Stores a block `[T, n]` with its `rnn_states` `[T+1, n, state]` (`RingStore.append`) and
        refreshes the priorities of the sequence starts whose sampleability it changed.

        Raises:
            ValueError: the block has no rnn_states, capacity < seq_len + T + 1 + frame history, or
                the errors of `RingStore.append`.
        """
        ring = self.ring
        T, H = block["rewards"].shape[0], ring.obs.history
        if block.get("rnn_states") is None:
            raise ValueError("sequence replay needs the blocks' rnn_states [T+1, N, state]")
        if self.seq_len + T + 1 + H > ring.capacity:
            raise ValueError(
                f"capacity {ring.capacity} < seq_len {self.seq_len} + T {T} + 1 + {H} history frames"
            )
        a = ring.append(block, columns, new_episode)
        off = torch.arange(-self.seq_len, T + 1 + H)[:, None]
        rows = (a.old_head[None] + off) % ring.capacity
        cols = a.columns[None].expand_as(rows)
        fresh = ((off >= 0) & (off < T)).expand_as(rows)
        keep = rows % self.stride == 0
        r, c, f = rows[keep], cols[keep], fresh[keep]
        valid = self.valid_starts(r, c)
        leaves = ((r // self.stride) * ring.num_columns + c).numpy()
        self.priorities.refresh(leaves, valid.numpy(), f.numpy())
        return a

    def valid_starts(self, starts: Tensor, cols: Tensor) -> Tensor:
        """`[B]` bool: the sequence starting at rows `starts` of `cols` is sampleable: all its steps
        are written, its observations can be read, and one of its learning steps is active."""
        ring = self.ring
        age = ring.age(starts, cols)
        ok = (age < ring.count[cols]) & (age >= self.seq_len - 1)
        k = torch.arange(self.burn_in, self.burn_in + self.learn_len)[:, None]
        learn_rows = (starts[None] + k) % ring.capacity
        ok &= ring.is_active[learn_rows, cols[None].expand_as(learn_rows)].any(0)
        if ring.obs.history:
            all_rows = (starts[None] + torch.arange(self.seq_len + 1)[:, None]) % ring.capacity
            ok &= ring.obs.valid(ring, all_rows, cols[None].expand_as(all_rows)).all(0)
        return ok

    def sample(
        self, batch_size: int, generator: torch.Generator | None = None, env_steps: int = 0
    ) -> SequenceSample:
        """`batch_size` sequences drawn by priority (uniformly with alpha = 0), with replacement.

        Returns:
            a `SequenceSample` of S = seq_len steps (its fields' shapes and dtypes there), without
            lag.
        Raises:
            ValueError: nothing sampleable yet.
        """
        ring = self.ring
        leaves, p_alpha = self.priorities.draw(batch_size, generator)
        idx = torch.from_numpy(leaves)
        starts, cols = (idx // ring.num_columns) * self.stride, idx % ring.num_columns
        rows = (starts[None] + torch.arange(self.seq_len + 1)[:, None]) % ring.capacity
        c = cols[None].expand_as(rows)
        steps, cs = rows[:-1], c[:-1]
        assert ring.actions is not None and ring.rnn_states is not None
        return SequenceSample(
            obs=ring.obs.read(rows, c),
            actions=ring.actions[steps, cs],
            rewards=ring.rewards[steps, cs],
            terminated=ring.terminated[steps, cs],
            truncated=ring.truncated[steps, cs],
            is_active=ring.is_active[steps, cs],
            episode=ring.episode[steps, cs],
            rnn_states=ring.rnn_states[starts, cols],
            is_weights=self.priorities.is_weights(p_alpha, env_steps),
            starts=starts,
            columns=cols,
            indices=idx,
        )

    def update_priorities(self, indices: Tensor, td_errors: Tensor, mask: Tensor | None = None) -> None:
        """Sets the priorities of sequences `indices` `[B]` int64 from the TD errors `[L, B]` of
        their learning steps (`mixed_priority`, then + eps).

        Raises:
            ValueError: a non-finite TD error.
        """
        p = mixed_priority(td_errors, self.eta, mask).cpu().numpy()
        self.priorities.update(indices.cpu().numpy(), p + self.priorities.eps)

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": type(self).__name__,
            "seq_len": self.seq_len,
            "ring": self.ring.state_dict(),
            "priorities": self.priorities.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Raises ValueError for a state of another kind or sequence length."""
        if state["kind"] != type(self).__name__ or state["seq_len"] != self.seq_len:
            raise ValueError(
                f"saved replay is a {state['kind']} of seq_len {state.get('seq_len')}, this one of {self.seq_len}"
            )
        self.ring.load_state_dict(state["ring"])
        self.priorities.load_state_dict(state["priorities"])
