"""Commands from the run (the main process: a population controller such as PBT) to one policy's
learner, sent with `Placement.send_command(cmd)`.

The serial placement applies a command directly, between two batches; the async placement sends
it to the learner process's command queue, where it runs in order with the batches and
checkpoints (`surge.runtime.learner_process`). Commands are plain named tuples of ints, strings
and floats (they are pickled onto the queue).
"""

from __future__ import annotations

from typing import NamedTuple


class SetHyperparams(NamedTuple):
    """Set policy `policy_id`'s hyper-parameters: `values` maps `PolicyHyperparams` names to
    floats (unnamed ones keep their values). Takes effect from the learner's next optimizer step.
    A bad name or value is refused by `Placement.send_command` with ValueError before it is sent."""

    policy_id: int
    values: dict[str, float]


class ReplacePolicy(NamedTuple):
    """Replace policy `policy_id`'s weights (normalisers included), Adam state and
    hyper-parameters with policy `source_policy_id`'s current ones (PBT's exploit step). The
    replaced policy's `policy_version` is not copied: it increments, so the lag of its samples
    still in flight never goes negative. Inference acts with the new weights once the learner
    publishes them (at once in the serial placement)."""

    policy_id: int
    source_policy_id: int


class SetRewardShaping(NamedTuple):
    """Set policy `policy_id`'s reward-shaping scheme (a Doom scheme dict,
    `surge.envs.doom.reward_shaping`) in every rollout worker: an agent's env takes it when the
    agent starts an episode played by that policy, and at once for the agents playing it now."""

    policy_id: int
    scheme: dict


Command = SetHyperparams | ReplacePolicy | SetRewardShaping
