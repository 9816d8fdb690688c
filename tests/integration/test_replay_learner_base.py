"""`ReplayLearnerBase` (surge/learning/replay_learner.py) with the tiny algorithm of
`tests/replay_tiny_algo.py`: learning starts and the replay ratio (counted as SB3 counts
train_freq/gradient_steps), actor ids as columns, another policy's steps never sampled, priorities
set from the TD errors, `--save_replay_buffer` round trip, and a serial run through the engine."""

import copy
import math
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `tests.replay_tiny_algo` as the command line names it
    sys.path.insert(0, str(ROOT))

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.errors import ConfigError  # noqa: E402
from surge.replay.prioritized import PrioritizedReplay  # noqa: E402
from surge.runtime.serial import SerialPlacement  # noqa: E402
from tests.replay_tiny_algo import LinearQ, TinyLearner  # noqa: E402

ALGO = "--algo=tests.replay_tiny_algo:TINY_REPLAY"
ARGS = [
    "--env=CartPole-v1",
    ALGO,
    "--num_workers=1",
    "--num_envs_per_worker=2",
    "--rollout=8",
    "--recurrence=8",
    "--use_rnn=False",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
    "--num_torch_threads=1",
    "--seed=1",
]


def _learner(tmp_path, *extra, columns=4):
    cfg = parse_cfg([*ARGS, f"--train_dir={tmp_path}", *extra])
    return TinyLearner(cfg, LinearQ(4, 2), None, torch.device("cpu"), 0, num_columns=columns)


def _block(T, cols, version=0, seed=0, acting=None):
    g = torch.Generator().manual_seed(seed)
    n = len(cols)
    b = {
        "obs": torch.randn(T + 1, n, 4, generator=g),
        "actions": torch.randint(2, (T, n), generator=g),
        "rewards": torch.ones(T, n),
        "dones": torch.zeros(T, n),
        "trunc": torch.zeros(T, n),
        "is_active": torch.ones(T, n, dtype=torch.bool),
        "behavior_version": torch.full((T, n), version, dtype=torch.int64),
        "actor_ids": torch.tensor(cols),
    }
    if acting is not None:
        b["acting_policy"] = acting
    return b


def test_learning_starts_and_replay_ratio_count_like_sb3(tmp_path):
    # SB3: train_freq=4 env steps, gradient_steps=1, 1 env -> 0.25 updates per env step after learning_starts
    learner = _learner(tmp_path, "--learning_starts=40", "--replay_ratio=0.25")
    total = 0
    for i in range(10):  # 10 blocks of 8 steps x 2 columns = 16 env steps each
        learner.observe(_block(8, [0, 1], seed=i))
        stats = learner.train_replay()
        steps = 16 * (i + 1)
        expected = max(0, math.floor(0.25 * (steps - 40))) if steps >= 40 else 0
        total += 0 if stats is None else int(stats["updates_run"])
        assert total == expected == learner.updates == learner.policy_version
    assert stats is not None and stats["replay_size"] == 160 and stats["env_steps"] == 160


def test_no_update_before_learning_starts(tmp_path):
    learner = _learner(tmp_path, "--learning_starts=100", "--replay_ratio=1")
    learner.observe(_block(8, [0, 1]))
    assert learner.train_replay() is None and learner.policy_version == 0


def test_other_policys_steps_are_never_sampled_and_lag_is_measured(tmp_path):
    learner = _learner(tmp_path, "--learning_starts=1", "--replay_ratio=4")
    acting = torch.zeros(8, 2, dtype=torch.int8)
    acting[:, 1] = 1  # column 3's steps belong to policy 1
    learner.observe(_block(8, [2, 3], acting=acting, version=0))
    assert learner.env_steps == 8
    stats = learner.train_replay()
    assert stats is not None
    cols = torch.cat([s["columns"] for s in learner.batches])
    assert set(cols.tolist()) == {2}
    lags = [float(s["lag"][0]) for s in learner.batches]
    assert lags == list(range(len(lags)))  # all steps acted by version 0; one update per sample


def test_actor_ids_outside_columns_refused(tmp_path):
    learner = _learner(tmp_path, columns=2)
    with pytest.raises(ValueError, match="actor ids"):
        learner.observe(_block(8, [1, 2]))


def test_prioritized_replay_gets_td_errors_as_priorities(tmp_path):
    learner = _learner(tmp_path, "--prioritized_replay=True", "--learning_starts=1", "--replay_ratio=0.2")
    assert isinstance(learner.replay, PrioritizedReplay)
    learner.observe(_block(8, [0]))
    stats = learner.train_replay()
    assert stats is not None and stats["updates_run"] == 1
    s = learner.batches[0]
    tree = learner.replay.priorities
    leaves = s["indices"].numpy()
    expected = (s["td_errors"].abs().double().numpy() + tree.eps) ** learner.params.pri_alpha
    # a leaf drawn twice holds the last TD error written for it
    last = {int(k): v for k, v in zip(leaves, expected, strict=True)}
    got = tree.tree.get(leaves)
    expected = [last[int(k)] for k in leaves]
    assert torch.allclose(torch.as_tensor(got), torch.as_tensor(expected), rtol=1e-5)


def test_bad_flags_are_refused(tmp_path):
    for flag in ["--replay_ratio=0", "--n_step_return=0", "--pri_alpha=2", "--learning_starts=-1"]:
        with pytest.raises(ConfigError) as e:
            parse_cfg([*ARGS, f"--train_dir={tmp_path}", flag])
        assert e.value.field == flag[2:].split("=")[0]


def test_save_replay_buffer_round_trip(tmp_path):
    args = ("--save_replay_buffer=True", "--learning_starts=1", "--replay_ratio=0.5")
    a = _learner(tmp_path, *args)
    last_obs = None
    for i in range(3):
        blk = _block(8, [0, 1], version=i, seed=i)
        if last_obs is not None:
            blk["obs"][0] = last_obs  # the stream continues
        last_obs = blk["obs"][-1]
        a.observe(blk)
        a.train_replay()
    state = copy.deepcopy(a.state_dict())  # as a checkpoint file holds it (no tensor shared with a)
    assert (a.replay_folder() / state["replay_file"]).exists()
    b = _learner(tmp_path, *args)
    b.model.load_state_dict(a.model.state_dict())
    b.load_state_dict(state)
    assert (b.env_steps, b.updates) == (a.env_steps, a.updates) and len(b.replay) == len(a.replay)
    # same next block (continuing the stream: no cut), same samples, same updates
    blk = _block(8, [0, 1], version=3, seed=9)
    blk["obs"][0] = last_obs
    for x in (a, b):
        x.observe(copy.deepcopy(blk))
        x.train_replay()
    assert not bool(b.replay.ring.truncated.any())
    for sa, sb in zip(a.batches[-4:], b.batches[-4:], strict=True):
        assert torch.equal(sa["indices"], sb["indices"]) and torch.equal(sa["obs"], sb["obs"])
    for pa, pb in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_resumed_column_with_other_first_obs_is_cut(tmp_path):
    learner = _learner(tmp_path, "--save_replay_buffer=True")
    learner.observe(_block(8, [0], seed=0))
    state = learner.state_dict()
    b = _learner(tmp_path, "--save_replay_buffer=True")
    b.load_state_dict(state)
    b.observe(_block(8, [0], seed=5))  # a fresh env: its first obs differs from the stored one
    ring = b.replay.ring
    assert bool(ring.truncated[7, 0])  # the stored stream's last step is cut


def test_serial_run_through_the_engine(tmp_path):
    cfg = parse_cfg(
        [*ARGS, f"--train_dir={tmp_path}", "--serial_mode=True", "--learning_starts=32", "--replay_ratio=0.5"]
    )
    placement = SerialPlacement(cfg, [], [None])
    placement.start()
    try:
        learner = placement.c.learners[0]
        stats = {}
        for _ in range(60):
            stats = placement.step().train_stats.get(0, stats)
        assert learner.num_columns == 2
        assert learner.env_steps >= 100 and learner.updates == math.floor(0.5 * (learner.env_steps - 32))
        assert learner.policy_version == learner.updates
        assert {"replay_size", "updates", "policy_lag_avg", "policy_lag_max", "loss"} <= set(stats)
        assert set(torch.cat([s["columns"] for s in learner.batches]).tolist()) == {0, 1}
    finally:
        placement.close()


def test_resume_without_a_saved_replay_waits_for_learning_starts_again(tmp_path):
    a = _learner(tmp_path, "--learning_starts=16", "--replay_ratio=0.5")
    for i in range(3):
        a.observe(_block(8, [0, 1], seed=i))
        a.train_replay()
    state = copy.deepcopy(a.state_dict())
    assert "replay_file" not in state
    b = _learner(tmp_path, "--learning_starts=16", "--replay_ratio=0.5")
    b.load_state_dict(state)
    assert (b.env_steps, b.updates) == (48, 16) and len(b.replay) == 0
    b.observe(_block(8, [0], seed=7))
    assert b.train_replay() is None  # 8 new steps < learning_starts
    b.observe(_block(8, [0], seed=8))
    assert b.train_replay() is None  # floor(0.5 * (16 - 16)) = 0 due
    b.observe(_block(8, [0], seed=9))
    assert b.train_replay()["updates_run"] == 4


def test_a_column_whose_worker_was_replaced_mid_run_is_cut(tmp_path):
    """Review of the replay wiring: only a resumed learner compared a column's first block with its
    stored stream, so a rollout worker replaced while the run went on (its envs reset) had its
    first steps joined to the old worker's in n-step windows."""
    learner = _learner(tmp_path)
    first = _block(8, [0], seed=0)
    learner.observe(first)
    continuing = _block(8, [0], seed=1)
    continuing["obs"][0] = first["obs"][8]  # what start_next carries to the next slot
    learner.observe(continuing)
    ring = learner.replay.ring
    assert not bool(ring.truncated[7, 0])  # a continuing block is not cut
    learner.observe(_block(8, [0], seed=2))  # a replaced worker: its envs were reset
    assert bool(ring.truncated[15, 0])  # the stored stream's last step is cut


def test_each_save_writes_the_replay_as_it_is_and_keeps_the_previous_one(tmp_path):
    """Review of the replay wiring: the file was named after policy_version alone and not written
    again when it existed, so saves before learning starts (or without an update in between)
    pointed at the first, smaller replay; and the previous checkpoint's replay was deleted before
    the new checkpoint was known to be written."""
    args = ("--save_replay_buffer=True", "--learning_starts=1000")  # no update: the version stays 0
    a = _learner(tmp_path, *args)
    a.observe(_block(8, [0, 1], seed=0))
    first = copy.deepcopy(a.state_dict())
    for i in range(1, 4):
        a.observe(_block(8, [0, 1], seed=i))
    second = copy.deepcopy(a.state_dict())
    assert a.policy_version == 0 and first["replay_file"] != second["replay_file"]
    assert (a.replay_folder() / first["replay_file"]).exists()  # the previous checkpoint's replay is kept
    b = _learner(tmp_path, *args)
    b.load_state_dict(second)
    assert len(b.replay) == len(a.replay) > 0 and b.env_steps == a.env_steps == 64
    a.observe(_block(8, [0, 1], seed=9))
    a.state_dict()
    assert not (a.replay_folder() / first["replay_file"]).exists()  # older than the previous one: removed


def test_an_update_loop_stopped_early_reports_the_updates_it_ran(tmp_path):
    learner = _learner(tmp_path, "--learning_starts=1", "--replay_ratio=1")
    learner.observe(_block(8, [0, 1], seed=0))
    polls = iter([False, True])  # polled before the 2nd and 3rd update: stop before the 3rd
    learner.should_stop = lambda: next(polls)
    stats = learner.train_replay()
    assert stats is not None and stats["updates_run"] == 2 == learner.updates
