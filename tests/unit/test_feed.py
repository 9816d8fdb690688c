"""The on-policy / replay choice is made in one place, the declaration's feed
(`surge.learning.feed.Feed`): it sizes the block pool, chooses the batcher, counts the
trajectories a learner holds for the memory estimate and gives a replay its number of columns
(the inverse of the pool's sizing)."""

import dataclasses

import pytest

from surge.algorithms.appo.declaration import APPO
from surge.app.resolve import parse_cfg
from surge.learning import algorithm as registry
from surge.learning.algorithm import register_algorithm
from surge.learning.feed import Feed
from surge.runtime.components import blocks_per_split

ARGS = ["--env=CartPole-v1", "--num_workers=3", "--num_envs_per_worker=4", "--worker_num_splits=2"]


@pytest.fixture
def toy_replay():
    """APPO's declaration with the replay feed: only its feed differs."""
    register_algorithm(dataclasses.replace(APPO, name="TOY_REPLAY_FEED", feed=Feed.REPLAY))
    yield "TOY_REPLAY_FEED"
    registry._ALGORITHMS.pop("TOY_REPLAY_FEED", None)


def test_the_feed_of_the_declaration_sizes_the_pool_and_chooses_the_batcher(tmp_path, toy_replay):
    appo = parse_cfg([*ARGS, f"--train_dir={tmp_path}"])
    cfg = parse_cfg([*ARGS, f"--train_dir={tmp_path}", "--algo=APPO"])
    cfg.algo = toy_replay  # the same flags, the replay feed
    assert blocks_per_split(cfg, 1) == Feed.REPLAY.blocks_per_split(cfg, 1) == 2
    assert blocks_per_split(appo, 1) == Feed.ON_POLICY.blocks_per_split(appo, 1) > 2
    replay, on_policy = Feed.REPLAY.make_batcher(cfg, 2, 1), Feed.ON_POLICY.make_batcher(appo, 2, 1)
    assert replay.whole_arrivals and replay.traj_per_batch == 1
    iteration = appo.batch_size * appo.num_batches_per_iteration // appo.rollout
    assert not on_policy.whole_arrivals and on_policy.traj_per_batch == iteration
    assert Feed.REPLAY.iteration_trajectories(cfg) == 0
    assert Feed.ON_POLICY.iteration_trajectories(appo) == iteration


@pytest.mark.parametrize("num_agents", [1, 3])
def test_a_replay_counts_its_columns_from_the_pool_it_sized(tmp_path, toy_replay, num_agents):
    cfg = parse_cfg([*ARGS, f"--train_dir={tmp_path}"])
    cfg.algo = toy_replay
    owners, per_split = 3 * 2, 4 // 2 * num_agents
    slots = owners * Feed.REPLAY.blocks_per_split(cfg, num_agents) * per_split
    assert Feed.REPLAY.num_columns(cfg, slots) == 3 * 4 * num_agents
    with pytest.raises(ValueError):
        Feed.REPLAY.num_columns(cfg, slots + 1)
    with pytest.raises(ValueError):
        Feed.ON_POLICY.num_columns(cfg, slots)
