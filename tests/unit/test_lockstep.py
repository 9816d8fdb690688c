"""`--deterministic=True`'s schedule (`surge.runtime.lockstep`): its round arithmetic against a naive
walk over the trajectories, the learner's block order, and the flags it refuses before any process
starts."""

import random

import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.errors import ConfigError
from surge.runtime.lockstep import NO_ROUNDS, BlockOrder, Schedule, check_deterministic, pack_rounds, slot_of


def _naive_acting_iteration(B: int, T: int, r: int) -> int:
    """Iterations (T trajectories each, in order) whose trajectories all lie in rounds 0..r-2."""
    available = B * max(0, r - 1)  # trajectories of rounds 0..r-2
    k = 0
    while (k + 1) * T <= available:
        k += 1
    return k


@pytest.mark.parametrize("B,T", [(40, 16), (16, 16), (8, 32), (10, 3), (7, 7), (64, 512)])
def test_schedule_matches_a_naive_walk(B, T):
    s = Schedule(B, T, round_env_steps=B * 32)
    for r in range(60):
        assert s.acting_iteration(r) == _naive_acting_iteration(B, T, r), r
    for k in range(-1, 40):  # the last round acting with iteration k's weights
        rounds = (
            [r for r in range((k + 2) * T // B + 5) if _naive_acting_iteration(B, T, r) <= k]
            if k >= 0
            else [-1]
        )
        assert s.last_round(k) == max(rounds), k


@pytest.mark.parametrize("B,T", [(40, 16), (16, 16), (8, 32), (10, 3), (7, 7), (64, 512)])
def test_first_round_and_acting_versions_match_a_naive_walk(B, T):
    """The weight slots hold the acting versions only, each with its rounds `[first, last]`."""
    s = Schedule(B, T, round_env_steps=B * 32)
    acting = [_naive_acting_iteration(B, T, r) for r in range(1000)]
    for k in range(40):
        assert s.acts(k) == (k in acting), k
        later = [r for r, n in enumerate(acting) if n >= k]
        assert s.first_round(k) == later[0], k
        if s.acts(k):  # its rounds are exactly those acting with it
            assert [r for r, n in enumerate(acting) if n == k] == list(
                range(s.first_round(k), s.last_round(k) + 1)
            )


def test_a_slot_is_found_by_the_packed_rounds_it_holds():
    rounds = np.full(2, NO_ROUNDS, dtype=np.int64)
    assert slot_of(rounds, 0) == -1  # nothing published: every round waits
    rounds[1] = pack_rounds(3, 5)
    assert [slot_of(rounds, r) for r in range(7)] == [-1, -1, -1, 1, 1, 1, -1]
    rounds[0] = pack_rounds(6, 2**31 - 1)
    assert slot_of(rounds, 6) == 0 and slot_of(rounds, 2**31 - 1) == 0 and slot_of(rounds, 5) == 1


def test_iteration_limit_counts_iterations_of_complete_rounds():
    # 2 workers x 20 envs x rollout 32 = 1280 env steps a round of 40 trajectories, 16 per iteration
    s = Schedule(40, 16, 1280)
    budget = 20_000  # 15 whole rounds; the last may be cut at the stop, so 14 count: 560 trajectories
    assert s.iteration_limit(budget) == 560 // 16
    assert s.iteration_limit(1279) == 0 and s.iteration_limit(0) == 0


def test_block_order_hands_blocks_out_by_round_then_owner():
    owner_slots, owners, rounds = 30, 4, 5
    arrivals = []
    for o in range(owners):
        own = [(r, o) for r in range(rounds)]  # an owner's blocks arrive in its own order
        arrivals.append(own)
    rng = random.Random(0)
    order = BlockOrder(owner_slots, owners)
    out = []
    while any(arrivals):
        o = rng.choice([i for i, a in enumerate(arrivals) if a])
        r, _ = arrivals[o].pop(0)
        first = o * owner_slots + (r % 3) * 10  # any block of the owner's range
        order.add(first, None)
        out += [(f // owner_slots, f) for f, _ in order.pop_ready()]
    assert [o for o, _ in out] == [o for _ in range(rounds) for o in range(owners)]
    assert order.rounds_done == rounds


def _cfg(*flags):
    return parse_cfg(["--env=cartpole", "--seed=1", "--deterministic=True", *flags])


@pytest.mark.parametrize(
    "flags,named",
    [
        (["--algo=DQN", "--train_for_env_steps=100000"], "DQN"),
        (["--num_policies=2"], "num_policies"),
        (["--num_policies=2", "--with_pbt=True"], "num_policies"),
        (["--policy_workers_per_policy=0"], "policy_workers_per_policy"),
        (["--num_minibatches_to_accumulate=0"], "num_minibatches_to_accumulate"),
        (["--distributed=ray"], "distributed"),
    ],
)
def test_uncovered_flags_are_refused_naming_the_field(flags, named):
    with pytest.raises(ConfigError) as e:
        check_deterministic(_cfg(*flags))
    assert e.value.field == "deterministic" and named in str(e.value) and "Fix:" in str(e.value)


def test_a_seed_is_required():
    with pytest.raises(ConfigError, match="--seed"):
        check_deterministic(parse_cfg(["--env=cartpole", "--deterministic=True"]))


def test_covered_configs_pass():
    check_deterministic(_cfg())
    check_deterministic(_cfg("--policy_workers_per_policy=2", "--worker_num_splits=1"))
    check_deterministic(
        _cfg("--serial_mode=True", "--algo=DQN", "--train_for_env_steps=100000")
    )  # serial replay is exact already
