"""Saving and loading a whole replay (surge.replay.persist, SB3's save_replay_buffer): the loaded
buffer samples exactly as the saved one and goes on identically after more appends."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from replay_streams import Stream, make_block, stack_frames

from surge.replay import PrioritizedReplay, SequenceReplay, UniformReplay, load_replay, save_replay


def frames_block(rng, T, n):
    newest = rng.integers(0, 255, (T + 1, n, 6, 6), dtype=np.uint8)
    term, trunc = rng.random((T, n)) < 0.05, rng.random((T, n)) < 0.05
    first = np.repeat(newest[0][:, None], 4, axis=1)  # a reset stack: the first frame repeated
    return {
        "obs": torch.from_numpy(stack_frames(newest, term | trunc, first)),
        "actions": torch.from_numpy(rng.integers(0, 4, (T, n))),
        "rewards": torch.from_numpy(rng.normal(size=(T, n)).astype(np.float32)),
        "terminated": torch.from_numpy(term),
        "truncated": torch.from_numpy(trunc),
        "is_active": torch.ones(T, n, dtype=torch.bool),
    }


def same(a, b):
    assert type(a) is type(b)
    for k in (f.name for f in dataclasses.fields(a)):
        assert (a[k] is None) == (b[k] is None)
        if a[k] is not None:
            torch.testing.assert_close(a[k], b[k], rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["uniform", "prioritized", "sequence"])
def test_round_trip(tmp_path, kind):
    rng = np.random.default_rng(0)

    def build():
        if kind == "uniform":
            return UniformReplay(30, 3, n_step=3, gamma=0.9)
        if kind == "prioritized":
            return PrioritizedReplay(40, 2, n_step=2, frame_stack=4)
        return SequenceReplay(40, 3, burn_in=2, learn_len=4, stride=2)

    a = build()
    streams = [Stream() for _ in range(3)]
    for _ in range(15):
        if kind == "prioritized":
            a.append(frames_block(rng, 5, 2), torch.tensor([0, 1]))
        else:
            a.append(make_block(rng, streams, [0, 1, 2], 5, 0.1, 0.05, 0.05), torch.tensor([0, 1, 2]))
    if kind != "uniform":
        s = a.sample(8, torch.Generator().manual_seed(0))
        td = torch.rand(4, 8) if kind == "sequence" else torch.rand(8)
        a.update_priorities(s["indices"], td)
    save_replay(a, tmp_path / "replay.pt")
    b = build()
    load_replay(b, tmp_path / "replay.pt")
    same(a.sample(32, torch.Generator().manual_seed(1)), b.sample(32, torch.Generator().manual_seed(1)))
    more = (
        frames_block(rng, 5, 2)
        if kind == "prioritized"
        else make_block(rng, streams, [0, 1, 2], 5, 0.1, 0.05, 0.05)
    )
    cols = torch.tensor([0, 1]) if kind == "prioritized" else torch.tensor([0, 1, 2])
    a.append(more, cols)
    b.append(more, cols)
    same(a.sample(32, torch.Generator().manual_seed(2)), b.sample(32, torch.Generator().manual_seed(2)))
    if kind != "uniform":
        np.testing.assert_array_equal(a.priorities.tree.tree, b.priorities.tree.tree)


def test_loading_into_another_shape_is_refused(tmp_path):
    a = UniformReplay(30, 3, n_step=3)
    a.append(make_block(np.random.default_rng(0), [Stream()], [0], 5, 0, 0, 0), torch.tensor([0]))
    save_replay(a, tmp_path / "r.pt")
    with pytest.raises(ValueError, match="n_step"):
        load_replay(UniformReplay(30, 3, n_step=2), tmp_path / "r.pt")
    with pytest.raises(ValueError, match="saved replay"):
        load_replay(UniformReplay(31, 3, n_step=3), tmp_path / "r.pt")
    with pytest.raises(ValueError, match="kind|Prioritized"):
        load_replay(PrioritizedReplay(30, 3, n_step=3), tmp_path / "r.pt")
