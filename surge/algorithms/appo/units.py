"""APPO's minibatch units: the batch of `prepare_batch`, cut into the units a minibatch samples
(chunks of `recurrence` steps under GAE, whole trajectories under V-trace), as one typed batch
indexed by units (`units[:, idx]`, or `units.map(gather)`)."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from surge.data.batch import TensorTuple
from surge.data.trajectory import Tree


@dataclass(frozen=True, slots=True)
class PPOUnits(TensorTuple):
    """`L` steps of `U` units; under V-trace `L = T` and obs, rnn_states (and cv_values) have
    `T + 1` rows (the bootstrap observation); under GAE `L = recurrence` and they have `L` rows.

    Fields present in both modes:
        obs: `[L(+1), U, ...]` (a dict of them for a dict observation space).
        rnn_states: `[L(+1), U, state]` float32, the behavior states (a chunk starts from row 0's).
        actions: `[L, U, ...]` as the action space gives them.
        behavior_log_probs, old_values: `[L, U]` float32 (the behavior policy's, its critic's).
        logits: `[L, U, num_logits]` float32, the behavior policy's.
        rnn_resets: `[L, U]` float32, 1 where the core restarts its state after the step (an
            episode end under `--zero_rnn_on_done`, else nowhere).
        valids: `[L, U]` float32, 1 for a step to learn from (`LearnerBase._mask_stale`).
    GAE only (None under V-trace): advantages, targets `[L, U]` float32, computed once per batch.
    V-trace only (None under GAE): rewards, terminated, truncated `[L, U]` float32 (the flags 0/1);
        cv_values `[T+1, U]` float32, the central value's values when it is on.
    kl_ref_logits: `[L, U, num_logits]` float32, a Gaussian head's KL reference under
        `--lr_schedule=kl_adaptive_*` (overwritten in place after each pass), else None.
    """

    obs: Tree
    rnn_states: Tensor
    actions: Tensor
    behavior_log_probs: Tensor
    old_values: Tensor
    logits: Tensor
    rnn_resets: Tensor
    valids: Tensor
    advantages: Tensor | None = None
    targets: Tensor | None = None
    rewards: Tensor | None = None
    terminated: Tensor | None = None
    truncated: Tensor | None = None
    cv_values: Tensor | None = None
    kl_ref_logits: Tensor | None = None
