"""Which learner gets which trajectory: each finished agent trajectory (one slot) goes to the
learner of every learning policy that acted in it at an active step, as Sample Factory sends each
agent's trajectory to its policy's learner; a block is not sent whole to every policy that appears
in it. A trajectory whose policy changes at an episode boundary goes to both learners (each masks
the other's steps, `LearnerBase._mask_stale`); a frozen policy's steps go nowhere.
"""

from __future__ import annotations

import numpy as np

#: a learner's share of a block: its slots (absolute indices, ascending), or None for every slot
OwnSlots = tuple[int, ...] | None


def route_block(
    slots: np.ndarray, policy_id: np.ndarray, is_active: np.ndarray, learning: list[int]
) -> dict[int, OwnSlots]:
    """Each learning policy's trajectories of one finished rollout of a split.

    Args:
        slots: `[N]` int64, the rollout's slots.
        policy_id: `[N, T]` int8, the policy that acted at each step (`TrajectoryBuffers.policy_id`).
        is_active: `[N, T]` bool, whether the step is trained on.
        learning: the learning policies (`surge.cfg.policy_roles.learning_policies`).
    Returns:
        `{policy: its slots}` for each learning policy with at least one active step in the
        rollout: None when that is every slot, else the slots (ascending as in `slots`).
        Vectorised: a few numpy passes over `[N, T]`, none per agent.
    """
    n = policy_id.shape[0]
    first = policy_id[:, 0]
    # the common case: each trajectory one policy throughout, every step active
    if is_active.all() and (policy_id == first[:, None]).all():
        acted = {p: first == p for p in learning}
    else:
        acted = {p: ((policy_id == p) & is_active).any(axis=1) for p in learning}
    out: dict[int, OwnSlots] = {}
    for p, mask in acted.items():
        count = int(mask.sum())
        if count == n:
            out[p] = None
        elif count:
            out[p] = tuple(slots[mask].tolist())
    return out
