"""The replays' samples are typed batches (`surge.replay.samples`): a `TransitionSample` from the
uniform and prioritized replays with the dtypes and shapes its class documents, indexed as one
(`s[idx]` equals every field indexed on its own), read by attribute or by name; a field that is
not there is a KeyError, not a silent None; the learner's sample moves every field to its device
and adds the lag."""

import dataclasses

import numpy as np
import pytest
import torch
from replay_streams import Stream, make_block

from surge.replay import PrioritizedReplay, SequenceReplay, UniformReplay
from surge.replay.samples import SequenceSample, TransitionSample


def _filled(replay, N: int = 3, blocks: int = 12, T: int = 5):
    rng = np.random.default_rng(0)
    streams = [Stream() for _ in range(N)]
    for _ in range(blocks):
        replay.append(make_block(rng, streams, list(range(N)), T, 0.1, 0.05, 0.05), torch.arange(N))
    return replay


@pytest.mark.parametrize("kind", ["uniform", "prioritized"])
def test_a_transition_sample_has_its_documented_fields_and_is_indexed_as_one(kind):
    replay = (
        UniformReplay(40, 3, n_step=3, gamma=0.9) if kind == "uniform" else PrioritizedReplay(40, 3, n_step=3)
    )
    s = _filled(replay).sample(16, torch.Generator().manual_seed(0))
    assert type(s) is TransitionSample
    B = 16
    assert s.obs.shape == s.next_obs.shape == (B, 1) and s.actions.shape == (B,)
    for name in ("returns", "discounts", "is_weights"):
        assert getattr(s, name).dtype == torch.float32 and getattr(s, name).shape == (B,), name
    for name in ("n_steps", "rows", "columns", "indices"):
        assert getattr(s, name).dtype == torch.int64 and getattr(s, name).shape == (B,), name
    assert torch.equal(s.indices, s.rows * 3 + s.columns)
    if kind == "uniform":
        assert bool((s.is_weights == 1).all())
    assert s.lag is None and s.td_errors is None  # the learner's and the update's
    idx = torch.tensor([7, 0, 7, 15])
    part = s[idx]
    assert type(part) is TransitionSample
    for f in dataclasses.fields(s):
        full, got = getattr(s, f.name), getattr(part, f.name)
        assert (got is None) if full is None else torch.equal(got, full[idx]), f.name
    assert s["returns"] is s.returns  # by name, as the dict was read
    with pytest.raises(KeyError, match="no field 'weights'"):
        s["weights"]
    with pytest.raises(KeyError):
        s["map"]  # a method is not a field


def test_a_sequence_sample_is_typed_with_time_major_fields():
    replay = _filled(SequenceReplay(60, 3, burn_in=2, learn_len=4, stride=2), blocks=20)
    s = replay.sample(8, torch.Generator().manual_seed(0))
    assert type(s) is SequenceSample
    S = replay.seq_len
    assert s.obs.shape == (S + 1, 8, 1) and s.actions.shape == (S, 8) and s.rewards.shape == (S, 8)
    assert s.terminated.dtype == s.truncated.dtype == s.is_active.dtype == torch.bool
    assert s.rnn_states.shape == (8, 3) and s.starts.shape == s.columns.shape == s.indices.shape == (8,)
    moved = s.map(lambda x: x.double())
    assert moved.rewards.dtype == torch.float64 and moved.lag is None
