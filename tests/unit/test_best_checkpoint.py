"""The best checkpoint (issue 55, item 14: a 20 MB `best` written and logged every ~8 s while the
return climbs): Sample Factory's three flags with its defaults (`--save_best_every_sec=5`,
`--save_best_after=100000`, `--save_best_metric=reward`), its rule (at most one best per interval,
only when the metric beats the best so far), and its quiet log (one line for a policy's first
best, then the saves at debug level)."""

import pytest

from surge.app.resolve import parse_cfg
from surge.errors import ConfigError
from surge.runtime.best_checkpoint import BestCheckpoints
from surge.runtime.policy_stats import PolicyStats


def _cfg(*extra, root="/tmp/unused"):
    return parse_cfg(["--env=cartpole", f"--train_dir={root}", "--experiment=best", *extra])


def test_the_flags_and_defaults_are_sample_factorys():
    cfg = _cfg()
    assert (cfg.save_best_every_sec, cfg.save_best_after, cfg.save_best_metric) == (5, 100000, "reward")
    assert _cfg("--save_best_metric=len").save_best_metric == "len"
    with pytest.raises(ConfigError, match="save_best_metric"):
        _cfg("--save_best_metric=win_rate")


def _stats(returns, lengths):
    ps = PolicyStats(stats_avg=100)
    ps.returns.extend(returns)
    ps.lengths.extend(lengths)
    return ps


def test_a_climbing_return_gets_at_most_one_best_per_interval_and_only_after_save_best_after():
    best = BestCheckpoints(_cfg(), num_policies=1)
    saves, frames = [], 0
    for tick in range(240):  # 2 minutes of 0.5 s ticks, the mean return climbing at each
        now, frames = 1000.0 + 0.5 * tick, frames + 2000
        ps = _stats([float(tick)] * 20, [10] * 20)
        if best.due(now, frames, [ps], learning={0}):
            saves.append((now, frames))
    assert saves[0][1] >= 100000  # none before --save_best_after env frames
    gaps = [b[0] - a[0] for a, b in zip(saves, saves[1:], strict=False)]
    assert min(gaps) >= 5.0 and len(saves) <= 120 / 5 + 1


def test_no_best_before_ten_episodes_and_none_that_does_not_beat_the_best():
    best = BestCheckpoints(_cfg("--save_best_after=0", "--save_best_every_sec=0"), num_policies=1)
    assert best.due(1.0, 10, [_stats([500.0] * 9, [9] * 9)], {0}) == []  # one lucky early episode
    assert best.due(2.0, 10, [_stats([100.0] * 10, [50] * 10)], {0}) == [0]
    assert best.due(3.0, 10, [_stats([90.0] * 10, [60] * 10)], {0}) == []


def test_save_best_metric_len_ranks_by_the_mean_length():
    best = BestCheckpoints(
        _cfg("--save_best_after=0", "--save_best_every_sec=0", "--save_best_metric=len"), 1
    )
    assert best.due(1.0, 10, [_stats([100.0] * 10, [50] * 10)], {0}) == [0]
    assert best.due(2.0, 10, [_stats([90.0] * 10, [60] * 10)], {0}) == [0]  # longer, lower return
    assert best.due(3.0, 10, [_stats([200.0] * 10, [40] * 10)], {0}) == []


def test_a_resumed_best_counts_only_when_measured_by_the_same_metric():
    state = {"best_return": 150.0}  # a checkpoint from before --save_best_metric: a mean return
    by_reward = BestCheckpoints(_cfg(), 1)
    by_reward.restore(0, state)
    assert by_reward.best == [150.0]
    by_len = BestCheckpoints(_cfg("--save_best_metric=len"), 1)
    by_len.restore(0, state)
    assert by_len.best == [float("-inf")]
    by_len.restore(0, {"best_return": 80.0, "best_metric": "len"})
    assert by_len.best == [80.0]
