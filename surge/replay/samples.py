"""What the replays' `sample` gives: typed batches (`surge.data.batch.TensorTuple`) with each
field's shape and dtype in its class. The learner moves a sample to its device in one `map`,
adds what only it knows (`lag`) and an update writes its
`td_errors` back: the two classes are mutable in their fields (not frozen), their tensors are
never copied by the replay learner."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from surge.data.batch import TensorTuple
from surge.data.trajectory import Tree


@dataclass(slots=True)
class TransitionSample(TensorTuple):
    """`B` steps of a `UniformReplay` or `PrioritizedReplay` with their n-step windows
    (`surge.replay.n_step`); every field is `[B, ...]`, so `sample[idx]` takes steps `idx`.

    Fields:
        obs, next_obs: `[B, ...]` as stored (dicts of them for a Dict space); next_obs is the
            observation the n-step return bootstraps from (unused where discounts is 0).
        actions: `[B, ...]` as the action space gives them.
        returns: `[B]` float32, the n-step return of the stored (shaped) rewards.
        discounts: `[B]` float32, gamma^L of the window's L steps, 0 after a termination.
        n_steps: `[B]` int64, the window's L (1..n_step).
        rows, columns: `[B]` int64, the step's cell in the ring; indices `[B]` int64
            `row * num_columns + column` (a prioritized replay's leaves).
        is_weights: `[B]` float32 importance weights (PER eq. 2, max 1), ones from a uniform
            replay.
        lag: `[B]` float32, policy versions between the learner and the acting policy, set by
            `ReplayLearnerBase.sample`; else None.
        td_errors: `[B]` float32, the priorities an update writes for a prioritized replay (`ReplayLearnerBase.update`); else None.
    """

    obs: Tree
    actions: Tensor
    returns: Tensor
    next_obs: Tree
    discounts: Tensor
    n_steps: Tensor
    rows: Tensor
    columns: Tensor
    indices: Tensor
    is_weights: Tensor
    lag: Tensor | None = None
    td_errors: Tensor | None = None


@dataclass(slots=True)
class SequenceSample(TensorTuple):
    """`B` sequences of `S = burn_in + learn_len + lookahead` steps of a `SequenceReplay`,
    time-major. The fields do not share a leading layout (`[S(+1), B]` and `[B]`): index the
    time-major ones with `sample[:, idx]`'s parts on their own, not the sample as a whole.

    Fields:
        obs: `[S+1, B, ...]` (the last row is the observation after the last step).
        actions: `[S, B, ...]`; rewards `[S, B]` float32; terminated, truncated, is_active
            `[S, B]` bool; episode `[S, B]` int64.
        rnn_states: `[B, state]` float32, stored at the first step.
        is_weights: `[B]` float32 (PER eq. 2, max 1).
        starts, columns: `[B]` int64, the first step's row and the ring column; indices `[B]`
            int64, the sequences' leaves in the priority tree.
        lag: `[learn_len, B]` float32, policy versions of the learning steps, set by the R2D2
            learner's `sample`; else None.
        td_errors: always None: the R2D2 learner sets a sequence's priority itself (from its
            learning steps' errors, `SequenceReplay.update_priorities`).
    """

    obs: Tree
    actions: Tensor
    rewards: Tensor
    terminated: Tensor
    truncated: Tensor
    is_active: Tensor
    episode: Tensor
    rnn_states: Tensor
    is_weights: Tensor
    starts: Tensor
    columns: Tensor
    indices: Tensor
    lag: Tensor | None = None
    td_errors: Tensor | None = None
