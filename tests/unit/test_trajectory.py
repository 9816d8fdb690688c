"""Trajectory buffers and the slot pool."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.data.block_pool import BlockPool
from surge.data.trajectory import TrajectoryBuffers
from surge.learning.algorithm import FieldSpec, get_algorithm
from tests.filled_buffers import filled_buffers


def test_layout_nan_fill_and_start_next():
    obs_space = gym.spaces.Dict(
        {"a": gym.spaces.Box(0, 1, (2,), np.float32), "b": gym.spaces.Box(0, 9, (3,), np.uint8)}
    )
    actions = gym.spaces.MultiDiscrete([2, 3])
    fields = get_algorithm("APPO").step_fields(actions)
    buf = TrajectoryBuffers(4, 5, obs_space, actions, rnn_state_size=6, step_fields=fields)
    assert buf.obs["a"].shape == (4, 6, 2) and buf.obs["b"].dtype == torch.uint8
    assert buf.actions.shape == (4, 5, 2) and buf.action_logits.shape == (4, 5, 5)
    assert buf.policy_id.shape == (4, 5) and buf.policy_id.dtype == torch.int8
    assert torch.isnan(buf.rewards).all() and torch.isnan(buf.obs["a"]).all()  # conspicuous until written
    buf.obs["a"][1, 5] = 7.0
    buf.rnn_states[1, 5] = 3.0
    buf.start_next(torch.tensor([1]), torch.tensor([3]))
    assert (buf.obs["a"][3, 0] == 7.0).all() and (buf.rnn_states[3, 0] == 3.0).all()
    got = buf.gather(torch.tensor([3, 1]))
    assert got["obs"]["a"].shape == (2, 6, 2) and got["rewards"].shape == (2, 5)


def test_gather_copies_each_slot_as_a_loop_over_slots_does():
    """`gather` (index_select) against the naive reference: one slot at a time, stacked."""
    buf = filled_buffers(6)  # every field, no NaN left
    slots = torch.tensor([4, 0, 4, 2])  # out of order, one slot twice
    got = buf.gather(slots)
    for name in buf.FIELDS:
        ref = getattr(buf, name)
        for key, value in ref.items() if isinstance(ref, dict) else [(None, ref)]:
            out = got[name][key] if key else got[name]
            expected = torch.stack([value[s] for s in slots.tolist()])
            assert out.dtype == value.dtype and torch.equal(out, expected), (name, key)
            assert out.data_ptr() != value.data_ptr()  # a copy: the slots can be reused at once


def test_start_next_carries_each_bootstrap_step_as_a_loop_over_slots_does():
    obs_space = gym.spaces.Dict(
        {"img": gym.spaces.Box(0, 255, (3, 4, 5), np.uint8), "v": gym.spaces.Box(-1, 1, (2,), np.float32)}
    )
    buf = TrajectoryBuffers(8, 4, obs_space, gym.spaces.Discrete(3), 6)
    g = torch.Generator().manual_seed(1)
    for t in [buf.obs["img"], buf.obs["v"], buf.rnn_states]:
        t.copy_((torch.rand(t.shape, generator=g) * 200).to(t.dtype))
    old, new = torch.tensor([5, 0, 2]), torch.tensor([7, 3, 1])
    expected = {
        name: [t[o, 4].clone() for o in old.tolist()]
        for name, t in [("img", buf.obs["img"]), ("v", buf.obs["v"]), ("rnn", buf.rnn_states)]
    }
    untouched = buf.obs["img"][:, 1:].clone()
    buf.start_next(old, new)
    for name, t in [("img", buf.obs["img"]), ("v", buf.obs["v"]), ("rnn", buf.rnn_states)]:
        for n, e in zip(new.tolist(), expected[name], strict=True):
            assert torch.equal(t[n, 0], e), name
    assert torch.equal(buf.obs["img"][:, 1:], untouched)  # only row 0 of the new slots is written


def test_each_algorithm_allocates_only_its_own_fields():
    obs, actions = gym.spaces.Box(0, 1, (3,), np.float32), gym.spaces.Discrete(4)
    a2c = TrajectoryBuffers(2, 3, obs, actions, 0, get_algorithm("A2C").step_fields(actions))
    dummy = TrajectoryBuffers(2, 3, obs, actions, 0, get_algorithm("DUMMY_SAMPLER").step_fields(actions))
    assert "values" in a2c.FIELDS and "behavior_log_probs" not in a2c.FIELDS
    assert set(dummy.FIELDS) == set(TrajectoryBuffers.CORE_FIELDS)
    assert set(a2c.gather(torch.tensor([1]))) == set(a2c.FIELDS)
    with pytest.raises(ValueError, match="clashes"):
        TrajectoryBuffers(2, 3, obs, actions, 0, [FieldSpec("rewards", ())])


def test_block_pool_hands_each_block_to_its_owner_once():
    pool = BlockPool(num_owners=2, blocks_per_owner=2, block_size=3)
    a, b = pool.owner_view(0), pool.owner_view(1)
    a1, a2 = a.get(3), a.get(3)
    assert a.get(3) is None  # both of owner 0's blocks are in use
    assert a1.tolist() == [0, 1, 2] and a2.tolist() == [3, 4, 5] and b.get(3).tolist() == [6, 7, 8]
    a.hand_over(a2, [0])  # filled: now held by policy 0's learner
    assert a.get(3) is None
    pool.release([3, 4, 5], 0)
    assert a.get(3).tolist() == [3, 4, 5]


def test_a_slot_is_free_only_once_every_learner_that_holds_it_released_it():
    pool = BlockPool(num_owners=1, blocks_per_owner=1, block_size=2, num_policies=3)
    owner = pool.owner_view(0)
    slots = owner.get(2)
    owner.hand_over(slots, [0, 2])  # policies 0 and 2 acted in both trajectories
    pool.release([0, 1], 2)
    assert owner.get(2) is None  # learner 0 still holds them
    pool.release([0, 1], 0)
    assert owner.get(2).tolist() == [0, 1]
    pool.reset_owner(0)  # a restarted worker gets the slots it was filling back
    assert owner.get(2).tolist() == [0, 1]


def test_learners_hold_only_their_own_trajectories_and_an_owner_fills_any_free_slots():
    pool = BlockPool(num_owners=1, blocks_per_owner=2, block_size=2, num_policies=2)
    owner = pool.owner_view(0)
    first, second = owner.get(2), owner.get(2)
    owner.hand_over(first, {0: (0,), 1: (1,)})  # slot 0 policy 0's trajectory, slot 1 policy 1's
    owner.hand_over(second, {0: None})  # both policy 0's
    pool.release([2, 3], 0)
    assert owner.get(2).tolist() == [2, 3]  # a whole free block first: contiguous slots
    owner.hand_over(torch.tensor([2, 3]), {1: None})
    pool.release([1], 1)  # block 0: only slot 0 is still held (by learner 0)
    assert owner.get(2) is None  # one free slot: not enough for a rollout
    pool.release([2], 1)
    assert owner.get(2).tolist() == [1, 2]  # any free slots of the owner, lowest first
    assert pool.held[[1, 2], -1].tolist() == [1, 1] and pool.held[0, 0] == 1
