"""A frozen policy (`--frozen_policies`) acts but never learns, in both placements: its weights
never change, it has no learner, and no trajectory block is ever held for it; the run sets and
reads any policy's weights through `set_policy_weights` / `policy_weights`."""

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.population.roles import apply_frozen_sources
from surge.runtime.checkpoint import CheckpointManager

BASE = [
    "--env=CartPole-v1",
    "--experiment=frozen",
    "--num_policies=2",
    "--frozen_policies",
    "1:uniform",
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--rollout=16",
    "--recurrence=16",
    "--batch_size=64",
    "--use_rnn=False",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "16",
    "--seed=3",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
]


def _placement(tmp_path, serial: bool):
    cfg = parse_cfg([*BASE, f"--train_dir={tmp_path}", f"--serial_mode={serial}"])
    ckpts = [CheckpointManager(tmp_path / f"c{p}", 2, p) for p in range(2)]
    if serial:
        from surge.runtime.serial import SerialPlacement

        return SerialPlacement(cfg, ckpts, [None, None])
    from surge.runtime.async_placement import AsyncPlacement

    return AsyncPlacement(cfg, ckpts, [None, None])


def _equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _check(placement, steps_until, pool, has_learner):
    placement.start()
    try:
        apply_frozen_sources(placement.cfg, placement)
        frozen, version = placement.policy_weights(1)
        assert not frozen["policy_head.weight"].any() and version == 0  # 1:uniform
        start0, _ = placement.policy_weights(0)
        assert not has_learner(1) and has_learner(0)
        frozen_episodes = trained = 0
        while not (frozen_episodes >= 5 and trained >= 3):
            report = placement.step()
            frozen_episodes += sum(e.policy_id == 1 for e in report.episodes)
            trained += 0 in report.train_stats
            assert not report.train_stats.keys() - {0}
            assert not pool().held[:, 1].any()  # no block is ever held for the frozen policy
            assert steps_until(), "took too long"
        after, _ = placement.policy_weights(1)
        assert _equal(after, frozen)  # acted in many episodes, never changed
        learned, v0 = placement.policy_weights(0)
        assert v0 > 0 and not _equal(learned, start0)
        # round trip: policy 0's weights into the frozen slot, read back with their version
        placement.set_policy_weights(1, learned, v0)
        back, v1 = placement.policy_weights(1)
        assert v1 == v0 and _equal(back, learned)
        with pytest.raises(ValueError, match="learns"):
            placement.set_policy_weights(0, frozen, 1)
    finally:
        placement.close()


def _budget(seconds):
    import time

    end = time.monotonic() + seconds
    return lambda: time.monotonic() < end


def test_serial_frozen_policy_acts_but_never_learns(tmp_path):
    p = _placement(tmp_path, serial=True)
    _check(p, _budget(60), lambda: p.c.block_pool, lambda i: i in p.c.learners)


@pytest.mark.slow
def test_async_frozen_policy_acts_but_never_learns(tmp_path):
    p = _placement(tmp_path, serial=False)
    _check(p, _budget(120), lambda: p.block_pool, lambda i: f"learner_p{i}" in p.procs)


def test_commands_to_a_frozen_policy_are_refused_with_value_error(tmp_path):
    """SetHyperparams / ReplacePolicy name learners: a frozen policy has none (serial: a KeyError
    before, async: a command queue nobody reads)."""
    from surge.runtime.commands import ReplacePolicy, SetHyperparams

    placement = _placement(tmp_path, serial=True)
    placement.start()
    try:
        for cmd in (SetHyperparams(1, {"gamma": 0.9}), ReplacePolicy(0, 1), ReplacePolicy(1, 0)):
            with pytest.raises(ValueError, match="frozen"):
                placement.send_command(cmd)
        placement.send_command(SetHyperparams(0, {"gamma": 0.9}))  # the learning one still takes it
        assert placement.c.learners[0].hp.gamma == 0.9
    finally:
        placement.close()


@pytest.mark.timeout(60)
def test_synchronous_learning_beside_a_frozen_policy_does_not_stall(tmp_path):
    """A2C learns synchronously (`num_minibatches_to_accumulate=0`): the pool holds one batch. A
    frozen policy's trajectories are freed at hand-over, so the learner's held trajectories grow by
    less than a block and the pool needs one block more per owner, as with two learners; without
    it this run waits forever for a batch (one worker, one block per owner)."""
    from surge.app.training_run import train

    args = [
        "--env=CartPole-v1",
        "--experiment=a2c_frozen",
        f"--train_dir={tmp_path}",
        "--algo=A2C",
        "--serial_mode=True",
        "--num_policies=2",
        "--frozen_policies",
        "1:uniform",
        "--num_workers=1",
        "--num_envs_per_worker=4",
        "--worker_num_splits=1",
        "--rollout=8",
        "--recurrence=8",
        "--batch_size=32",
        "--use_rnn=False",
        "--train_for_env_steps=3000",
        "--seed=1",
    ]
    assert train(parse_cfg(args)) == "done"
