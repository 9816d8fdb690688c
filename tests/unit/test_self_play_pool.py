"""The self-play pool's bookkeeping (`surge.population.self_play.SelfPlayPool`): Elo against the
formula of Elo (1978), promotion of a snapshot when the score over games_to_check games passes
update_score (rl_games' `SelfPlayManager.update`), rl_games' rotation of the refreshed slots, and
the state round trip a resume relies on."""

import json
import math

import pytest

from surge.population.self_play import ELO_K, SelfPlayPool, elo_expected, elo_update, game_score


def test_elo_expected_score_and_update_follow_the_formula():
    # Elo 1978: E_a = 1 / (1 + 10^((R_b - R_a) / 400)); a 400-point favourite expects 10/11
    assert elo_expected(1400.0, 1000.0) == pytest.approx(10 / 11)
    assert elo_expected(1000.0, 1000.0) == pytest.approx(0.5)
    # the update R' = R + K (S - E), by hand with K = 32: the underdog (E = 1/11) wins
    ra, rb = elo_update(1000.0, 1400.0, 1.0)
    assert ELO_K == 32.0
    assert ra == pytest.approx(1000.0 + 32.0 * (1 - 1 / 11))
    assert rb == pytest.approx(1400.0 - 32.0 * (1 - 1 / 11))
    ra, rb = elo_update(1000.0, 1000.0, 0.5)  # a draw between equals moves nothing
    assert (ra, rb) == (1000.0, 1000.0)


def test_game_score_is_read_from_the_opponents_zero_sum_return():
    assert game_score(-1.0) == 1.0  # the opponent lost: a win of policy 0
    assert game_score(1.0) == 0.0
    assert game_score(0.0) == 0.5


def _naive_elo(results, k=32.0):
    """A naive loop over (score of the learner) against one fixed opponent, both rated 1000."""
    a = b = 1000.0
    for s in results:
        e = 1 / (1 + 10 ** ((b - a) / 400))
        a, b = a + k * (s - e), b + k * ((1 - s) - (1 - e))
    return a, b


def test_ratings_follow_a_stream_of_games():
    pool = SelfPlayPool(1, update_score=2.0, games_to_check=10, check_scores=True, env_update_num=1)
    stream = [-1.0, 1.0, 0.0, -1.0, -1.0]  # opponent returns
    for r in stream:
        pool.record(0, r)
    a, b = _naive_elo([1.0, 0.0, 0.5, 1.0, 1.0])
    assert pool.learner_elo == pytest.approx(a) and pool.snapshots[0].elo == pytest.approx(b)
    assert pool.snapshots[0].games == 5 and pool.games == 5


def test_a_snapshot_joins_only_after_games_to_check_games_above_update_score():
    pool = SelfPlayPool(3, update_score=0.7, games_to_check=10, check_scores=True, env_update_num=1)
    # 9 wins: not yet games_to_check games
    for _ in range(9):
        pool.record(0, -1.0)
    assert pool.checked_value() is None and not pool.should_promote()
    pool.record(1, -1.0)
    assert pool.checked_value() == 1.0 and pool.should_promote()
    snap, taken = pool.promote(policy_version=42, env_frames=1000)
    assert (snap.id, snap.policy_version, taken) == (1, 42, [0])
    assert snap.elo == pytest.approx(pool.learner_elo)  # starts at the learner's rating
    assert pool.slots == [1, 0, 0]
    assert pool.checked_value() is None  # the window restarts (rl_games' clear_stats)
    # exactly update_score does not pass (rl_games compares with >): 7 wins, 3 losses
    for r in [-1.0] * 7 + [1.0] * 3:
        pool.record(0, r)
    assert pool.checked_value() == pytest.approx(0.7) and not pool.should_promote()
    # draws count half: the rolling window of the last 10 now holds 6 wins, 3 losses, 1 draw
    pool.record(2, 0.0)
    assert pool.checked_value() == pytest.approx(0.65)


def test_check_scores_false_compares_the_mean_return():
    pool = SelfPlayPool(1, update_score=0.1, games_to_check=4, check_scores=False, env_update_num=1)
    for r in [-1.0, 1.0, -1.0, 0.0]:  # learner returns +1, -1, +1, 0: mean 0.25 (score mean 0.625)
        pool.record(0, r)
    assert pool.checked_value() == pytest.approx(0.25) and pool.should_promote()


def test_env_update_num_slots_rotate_by_one_as_rl_games_env_indexes():
    pool = SelfPlayPool(4, update_score=0.0, games_to_check=1, check_scores=True, env_update_num=2)
    taken = [pool.promote(v, 0)[1] for v in range(1, 6)]
    # rl_games: env_indexes = arange(env_update_num), then (env_indexes + 1) % num_actors
    assert taken == [[0, 1], [1, 2], [2, 3], [3, 0], [0, 1]]
    assert pool.slots == [5, 5, 3, 4]


def test_the_state_survives_a_json_round_trip():
    pool = SelfPlayPool(2, update_score=0.5, games_to_check=3, check_scores=True, env_update_num=1)
    for r in [-1.0, -1.0, 0.0]:
        pool.record(0, r)
    pool.promote(7, 123)
    pool.record(1, 1.0)
    state = json.loads(json.dumps(pool.state_dict()))
    again = SelfPlayPool(2, update_score=0.5, games_to_check=3, check_scores=True, env_update_num=1)
    again.load_state_dict(state)
    assert again.state_dict() == pool.state_dict()
    assert math.isclose(again.win_rate(), pool.win_rate())
    with pytest.raises(ValueError, match="slots"):
        SelfPlayPool(3, 0.5, 3, True, 1).load_state_dict(state)
