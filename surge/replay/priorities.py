"""What prioritized replays share (Schaul et al. 2016, "Prioritized Experience Replay"):

- eq. 1: `P(i) = p_i^alpha / sum_k p_k^alpha`, proportional variant, with `p_i = |delta_i| + eps`;
- eq. 2 (section 3.4): importance-sampling weights `w_i = (N * P(i))^-beta`, normalised by the
  largest weight of the batch (Algorithm 1, line 10, normalised per batch as in rlpyt);
- beta annealed linearly from beta0 to 1 over `beta_steps` env steps;
- new transitions get the largest priority seen so far (Algorithm 1, line 6), so each is replayed
  at least once soon.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from surge.replay.sum_tree import SumTree


def check_per_args(alpha: float, beta0: float, beta_steps: int, eps: float) -> None:
    """Raises ValueError for alpha < 0, beta0 outside [0, 1], beta_steps < 0 or eps <= 0."""
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    if not 0.0 <= beta0 <= 1.0:
        raise ValueError(f"beta0 must be in [0, 1], got {beta0}")
    if beta_steps < 0:
        raise ValueError(f"beta_steps must be >= 0, got {beta_steps}")
    if eps <= 0:
        raise ValueError(f"eps must be > 0, got {eps}")


class Priorities:
    """A sum tree of `p^alpha` over `size` leaves, with the PER bookkeeping above.

    Args:
        size: leaves (sampleable units: steps, or sequence starts).
        alpha: priority exponent (0 = uniform).
        beta0: IS exponent at env step 0; reaches 1 at `beta_steps` env steps (0: 1 at once).
        eps: added to |td| so that no transition gets priority 0.
    """

    def __init__(
        self,
        size: int,
        alpha: float = 0.6,
        beta0: float = 0.4,
        beta_steps: int = 1_000_000,
        eps: float = 1e-6,
    ):
        check_per_args(alpha, beta0, beta_steps, eps)
        self.tree = SumTree(size)
        self.alpha, self.beta0, self.beta_steps, self.eps = (
            float(alpha),
            float(beta0),
            int(beta_steps),
            float(eps),
        )
        self.max_priority = 1.0  # largest p (before alpha) seen so far

    def beta(self, env_steps: int) -> float:
        """beta at `env_steps` (env steps, not frames): beta0 + (1 - beta0) * min(1, env_steps / beta_steps)."""
        if self.beta_steps == 0:
            return 1.0
        return self.beta0 + (1.0 - self.beta0) * min(1.0, max(0, env_steps) / self.beta_steps)

    def refresh(self, leaves: np.ndarray, valid: np.ndarray, fresh: np.ndarray) -> None:
        """After an append: leaves `[M]` int64 whose sampleability was recomputed (`valid` `[M]` bool);
        `fresh` `[M]` bool marks leaves holding new data. Invalid leaves get 0; valid ones new or at
        0 get the max priority; the others keep theirs. `leaves` must be distinct."""
        cur = self.tree.get(leaves)
        top = self.max_priority**self.alpha
        new = np.where(valid, np.where(fresh | (cur == 0), top, cur), 0.0)
        self.tree.update(leaves, new)

    def draw(self, batch_size: int, generator: torch.Generator | None) -> tuple[np.ndarray, np.ndarray]:
        """Stratified proportional draw (Schaul et al. 2016, Appendix B.2.1: the range [0, total) cut
        into `batch_size` equal segments, one uniform draw in each). Returns leaves `[B]` int64 and
        their `p^alpha` `[B]` float64.

        Raises:
            ValueError: every priority is 0 (nothing sampleable).
        """
        total = self.tree.total
        if total <= 0:
            raise ValueError("the replay has no sampleable step yet: wait for more (learning starts later)")
        u = torch.rand(batch_size, generator=generator, dtype=torch.float64).numpy()
        return self.tree.find((np.arange(batch_size) + u) * (total / batch_size))

    def is_weights(self, p_alpha: np.ndarray, env_steps: int) -> Tensor:
        """`(N * P(i))^-beta / max_batch` `[B]` float32 (eq. 2), N = the leaves with priority > 0."""
        prob = p_alpha / self.tree.total
        w = (self.tree.num_nonzero * prob) ** (-self.beta(env_steps))
        return torch.from_numpy(w / w.max()).float()

    def update(self, leaves: np.ndarray, priorities: np.ndarray) -> None:
        """Sets `p = priorities` (already |td| + eps) of `leaves`; leaves whose priority is 0 now (no
        longer sampleable: overwritten or cut) are left at 0.

        Raises:
            ValueError: a non-finite or negative priority (they are caught where they enter).
        """
        p = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if not np.isfinite(p).all() or (p < 0).any():
            raise ValueError("priorities must be finite and >= 0 (a non-finite TD error?)")
        leaves = np.asarray(leaves, dtype=np.int64).reshape(-1)
        alive = self.tree.get(leaves) > 0
        if p.size:
            self.max_priority = max(self.max_priority, float(p.max()))
        self.tree.update(leaves[alive], p[alive] ** self.alpha)

    def state_dict(self) -> dict[str, object]:
        return {"tree": self.tree.state_dict(), "max_priority": self.max_priority}

    def load_state_dict(self, state: dict[str, object]) -> None:
        self.tree.load_state_dict(state["tree"])  # type: ignore[arg-type]
        self.max_priority = float(state["max_priority"])  # type: ignore[arg-type]
