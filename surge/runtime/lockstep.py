"""The fixed schedule of `--deterministic=True` in the async placement: which weights each rollout
acts with, the order in which blocks reach the learner, how many iterations a frame budget trains,
and the flags it covers.

A *round* is one rollout of every split of every rollout worker: `B` trajectories (slots), `B` =
`num_owners x block_size` with one policy. The learner trains iterations of `T` trajectories
(`Batcher.traj_per_batch`) taken from the blocks in (round, owner) order, owner = `worker x
num_splits + split`. Rollout `r` of every split acts with the weights after iteration `n(r)` =
`floor(B x max(0, r - 1) / T)`: the iterations trained on rounds `0..r-2` only, so the learner trains
on round `r - 1` while round `r` is collected (double buffering, a lag of one round).

The *acting versions* (the `n(r)`; the iterations in between are trained but never acted with)
are published into two weight slots in turn (`LockstepShared`), each with the rounds that act with
it: `[first_round(k), last_round(k)]`. A slot is written again only once every rollout acting with
its previous version is complete, so the learner trains on while the last rollouts of a round
finish, and keeps a copy of a version whose slot is not free yet. An inference process acts on a
rollout of round `r` only with the slot whose rounds hold `r` (it waits while none does), so the
weights of every step are fixed by the step's round alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from surge.cfg.config import Config, minibatches_to_accumulate
from surge.errors import ConfigError
from surge.learning.algorithm import Feed, get_algorithm
from surge.runtime.shared_state import SharedWeights

#: a slot's rounds before its first publish and while it is written again: none
NO_ROUNDS = -1


def pack_rounds(first: int, last: int) -> int:
    """A slot's rounds `[first, last]` (0 <= first <= last < 2**31) as one int64, so that a reader
    never sees one end of an old range with the other end of a new one (one aligned 8-byte store)."""
    return (first << 32) | last


def slot_of(rounds: Any, r: int) -> int:
    """The slot whose rounds (`LockstepShared.rounds[policy]`, a numpy view) hold round `r`; -1 when
    none does (its weights are not published yet)."""
    for i in range(len(rounds)):
        packed = int(rounds[i])
        if packed >= 0 and packed >> 32 <= r <= packed & 0xFFFFFFFF:
            return i
    return -1


class Schedule:
    """The round arithmetic of one learner.

    Args:
        round_trajectories: `B`, the trajectories (slots) of one round (> 0).
        iteration_trajectories: `T`, the trajectories of one training iteration (> 0).
        round_env_steps: env steps of one round (`num_workers x num_envs_per_worker x rollout`).
    """

    def __init__(self, round_trajectories: int, iteration_trajectories: int, round_env_steps: int):
        self.B, self.T, self.round_env_steps = round_trajectories, iteration_trajectories, round_env_steps

    def acting_iteration(self, r: int) -> int:
        """`n(r)`: the iterations trained before the weights rollout `r` (0-based) acts with."""
        return self.B * max(0, r - 1) // self.T

    def first_round(self, k: int) -> int:
        """The first rollout that acts with the weights of iteration `k` or later (the smallest `r`
        with `n(r) >= k`)."""
        if k <= 0:
            return 0
        return -(-k * self.T // self.B) + 1

    def acts(self, k: int) -> bool:
        """Whether some rollout acts with the weights of iteration `k` (`n(r) == k` for some `r`)."""
        return self.acting_iteration(self.first_round(k)) == k

    def last_round(self, k: int) -> int:
        """The last rollout that acts with the weights of iteration `k` (the largest `r` with
        `n(r) <= k`); -1 for `k < 0` (no rollout may act yet)."""
        if k < 0:
            return -1
        return ((k + 1) * self.T - 1) // self.B + 1

    def iteration_limit(self, env_steps_budget: int) -> int:
        """The iterations a run with this env step budget trains: those whose trajectories all lie
        in rounds every split surely completes before the workers stop. The workers stop once
        their total reaches the budget, and no split is more than two steps ahead of another
        (each inference batch waits for the same split of every worker), so all rounds below
        `budget // round_env_steps - 1` are complete whichever worker took the last step."""
        rounds = env_steps_budget // self.round_env_steps - 1
        return max(0, rounds * self.B // self.T)


@dataclass
class LockstepShared:
    """The shared memory of `--deterministic=True` (module docstring), per policy.

    Attributes:
        slots: `[num_policies][2]` the two weight slots of each policy.
        rounds: `[num_policies, 2]` int64, each slot's first and last round acting with its
            weights (`pack_rounds`); `NO_ROUNDS` before its first publish and while it is written.
    """

    slots: list[list[SharedWeights]]
    rounds: Tensor

    @staticmethod
    def make(model: nn.Module, num_policies: int) -> LockstepShared:
        """Two empty slots per policy for weights of `model`'s layout."""
        rounds = torch.full((num_policies, 2), NO_ROUNDS, dtype=torch.int64)
        slots = [[SharedWeights(model), SharedWeights(model)] for _ in range(num_policies)]
        return LockstepShared(slots, rounds.share_memory_())


class BlockOrder:
    """Puts the blocks a learner receives in (round, owner) order, whatever order they arrive in.

    Blocks of one owner (a split of a worker) arrive in the order it filled them (one pipe per
    worker), so a block's round is the count of its owner's earlier blocks.

    Args:
        owner_slots: slots of each owner's range (`blocks_per_owner x block_size`).
        num_owners: the owners (`num_workers x worker_num_splits`).
    """

    def __init__(self, owner_slots: int, num_owners: int):
        self.owner_slots, self.num_owners = owner_slots, num_owners
        self.received = [0] * num_owners  # blocks received per owner
        self.waiting: dict[tuple[int, int], tuple[int, tuple[int, ...] | None]] = {}
        self.next_round, self.next_owner = 0, 0  # the next block to hand out

    def add(self, first_slot: int, slots: tuple[int, ...] | None) -> None:
        """A block received (`BlockReady`'s fields)."""
        owner = first_slot // self.owner_slots
        r = self.received[owner]
        self.received[owner] = r + 1
        self.waiting[(r, owner)] = (first_slot, slots)

    def pop_ready(self) -> list[tuple[int, tuple[int, ...] | None]]:
        """The blocks now next in order, as `(first_slot, slots)`, oldest first."""
        out = []
        while (key := (self.next_round, self.next_owner)) in self.waiting:
            out.append(self.waiting.pop(key))
            self.next_owner += 1
            if self.next_owner == self.num_owners:
                self.next_round, self.next_owner = self.next_round + 1, 0
        return out

    @property
    def rounds_done(self) -> int:
        """Rounds whose every block was handed out."""
        return self.next_round


def check_deterministic(cfg: Config) -> None:
    """`--deterministic=True` covers the async placement with one on-policy policy served by
    inference processes; it is refused (before any process starts) for what it does not cover.

    Raises:
        ConfigError: on the first flag it does not cover, with why and the fix.
    """
    if not cfg.deterministic:
        return
    fix = "drop --deterministic, or "
    if cfg.seed is None:
        raise ConfigError(
            "deterministic", "needs a --seed: every random stream is seeded from it.", "give --seed=N."
        )
    if cfg.serial_mode:
        return  # the serial placement is exact already
    if get_algorithm(cfg.algo).feed is not Feed.ON_POLICY:
        raise ConfigError(
            "deterministic",
            f"--algo={cfg.algo} learns from replay: its updates follow the arrival of blocks, which "
            "the fixed schedule does not cover.",
            fix + "use --serial_mode=True (exact, and resumable bit for bit).",
        )
    refusals = [
        (cfg.distributed != "none", "distributed", "Ray sampler nodes ship blocks in no fixed order"),
        (cfg.num_policies > 1, "num_policies", "the schedule covers one policy"),
        (cfg.with_pbt, "with_pbt", "PBT changes hyper-parameters at times set by the clock"),
        (
            cfg.policy_workers_per_policy == 0,
            "policy_workers_per_policy",
            "acting in the rollout workers (0) is not covered: inference processes batch the splits",
        ),
        (
            minibatches_to_accumulate(cfg) == 0,
            "num_minibatches_to_accumulate",
            "synchronous PPO (0) publishes before collecting: use the default (-1)",
        ),
    ]
    for refused, name, why in refusals:
        if refused:
            raise ConfigError(
                "deterministic", f"not with --{name}={getattr(cfg, name)}: {why}.", fix + f"change --{name}."
            )
