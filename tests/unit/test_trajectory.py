"""Trajectory buffers and the slot pool."""

import gymnasium as gym
import numpy as np
import torch

from surge.data.trajectory import TrajectoryBuffers
from surge.runtime.shared_state import BlockPool


def test_layout_nan_fill_and_start_next():
    obs_space = gym.spaces.Dict(
        {"a": gym.spaces.Box(0, 1, (2,), np.float32), "b": gym.spaces.Box(0, 9, (3,), np.uint8)}
    )
    buf = TrajectoryBuffers(4, 5, obs_space, gym.spaces.MultiDiscrete([2, 3]), rnn_state_size=6)
    assert buf.obs["a"].shape == (4, 6, 2) and buf.obs["b"].dtype == torch.uint8
    assert buf.actions.shape == (4, 5, 2) and buf.action_logits.shape == (4, 5, 5)
    assert torch.isnan(buf.rewards).all() and torch.isnan(buf.obs["a"]).all()  # conspicuous until written
    buf.obs["a"][1, 5] = 7.0
    buf.rnn_states[1, 5] = 3.0
    buf.start_next(torch.tensor([1]), torch.tensor([3]))
    assert (buf.obs["a"][3, 0] == 7.0).all() and (buf.rnn_states[3, 0] == 3.0).all()
    got = buf.gather(torch.tensor([3, 1]))
    assert got["obs"]["a"].shape == (2, 6, 2) and got["rewards"].shape == (2, 5)


def test_block_pool_hands_each_block_to_its_owner_once():
    pool = BlockPool(num_owners=2, blocks_per_owner=2, block_size=3)
    a, b = pool.owner_view(0), pool.owner_view(1)
    a1, a2 = a.get(3), a.get(3)
    assert a.get(3) is None  # both of owner 0's blocks are in use
    assert a1.tolist() == [0, 1, 2] and a2.tolist() == [3, 4, 5] and b.get(3).tolist() == [6, 7, 8]
    pool.release(3)
    assert a.get(3).tolist() == [3, 4, 5]
