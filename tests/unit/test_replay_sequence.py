"""R2D2 sequence replay (surge.replay.sequence): stored recurrent state at the start, sequences
contiguous across blocks of a column, a cut (replaced worker) shows as a truncation, priority
mixing vs the formula, and only complete sequences have priority."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from replay_streams import Stream, make_block, obs_id

from surge.replay import SequenceReplay, mixed_priority


def fill(replay, rng, streams, blocks, T, cut_p=0.0, p_inactive=0.0):
    N = replay.ring.num_columns
    for _ in range(blocks):
        cols = sorted(rng.choice(N, size=rng.integers(1, N + 1), replace=False).tolist())
        new = torch.tensor([bool(len(streams[c]) and rng.random() < cut_p) for c in cols])
        for c, cut in zip(cols, new.tolist(), strict=True):
            if cut:
                streams[c].cut_after.add(len(streams[c]) - 1)
        replay.append(make_block(rng, streams, cols, T, 0.05, 0.03, p_inactive), torch.tensor(cols), new)


def test_sequences_are_contiguous_with_the_stored_start_state():
    rng = np.random.default_rng(0)
    N, T = 3, 6
    replay = SequenceReplay(60, N, burn_in=4, learn_len=8, stride=4, lookahead=2, alpha=0.0)
    streams = [Stream() for _ in range(N)]
    fill(replay, rng, streams, blocks=40, T=T)
    S = replay.seq_len
    out = replay.sample(300, torch.Generator().manual_seed(0))
    assert out["obs"].shape == (S + 1, 300, 1) and out["actions"].shape == (S, 300)
    assert out["rnn_states"].shape == (300, 3) and (out["is_weights"] == 1).all()
    spans_blocks = 0
    for b in range(300):
        c = int(out["columns"][b])
        g0 = int(out["actions"][0, b])
        s = streams[c]
        assert out["actions"][:, b].tolist() == list(range(g0, g0 + S)), "consecutive steps of one column"
        assert out["obs"][:, b, 0].tolist() == [obs_id(c, g) for g in range(g0, g0 + S + 1)]
        assert (out["rnn_states"][b] == obs_id(c, g0)).all(), "the state stored at the first step"
        assert out["rewards"][:, b].tolist() == pytest.approx(s.rewards[g0 : g0 + S])
        assert out["terminated"][:, b].tolist() == s.terminated[g0 : g0 + S]
        assert out["truncated"][:, b].tolist() == s.truncated[g0 : g0 + S]
        assert g0 + S + 1 <= len(s) + 1, "every step written, the last observation at most the pending one"
        assert g0 >= len(s) - (replay.ring.capacity - 1), "not overwritten"
        spans_blocks += g0 // T != (g0 + S - 1) // T
        # episode ids: +1 after each end
        ep = out["episode"][:, b]
        ends = [s.terminated[g] or s.truncated[g] for g in range(g0, g0 + S - 1)]
        assert (ep[1:] - ep[:-1]).tolist() == [int(e) for e in ends]
    assert spans_blocks == 300, "with T=6 and 14-step sequences every sequence spans blocks"
    assert len({(int(c), int(a)) for c, a in zip(out["columns"], out["actions"][0], strict=True)}) > 30


def test_a_cut_is_a_truncation_and_starts_are_on_the_stride():
    rng = np.random.default_rng(1)
    replay = SequenceReplay(48, 2, burn_in=2, learn_len=4, stride=3, alpha=0.0)
    streams = [Stream() for _ in range(2)]
    fill(replay, rng, streams, blocks=40, T=5, cut_p=0.3)
    assert any(s.cut_after for s in streams)
    out = replay.sample(200, torch.Generator().manual_seed(0))
    assert (out["starts"] % 3 == 0).all()
    for b in range(200):
        c, g0 = int(out["columns"][b]), int(out["actions"][0, b])
        for k, g in enumerate(range(g0, g0 + replay.seq_len)):
            assert bool(out["truncated"][k, b]) == (streams[c].truncated[g] or g in streams[c].cut_after)


def test_priority_mixing_follows_r2d2():
    rng = np.random.default_rng(2)
    td = torch.from_numpy(rng.normal(size=(7, 5)))
    mask = torch.from_numpy(rng.random((7, 5)) < 0.7)
    mask[:, 4] = False
    got = mixed_priority(td, 0.9, mask)
    for b in range(5):
        vals = [abs(float(td[t, b])) for t in range(7) if mask[t, b]]
        ref = 0.9 * max(vals) + 0.1 * sum(vals) / len(vals) if vals else 0.0
        assert float(got[b]) == pytest.approx(ref, rel=1e-12)
    replay = SequenceReplay(40, 2, burn_in=2, learn_len=4, stride=2, alpha=0.9, eta=0.9)
    streams = [Stream() for _ in range(2)]
    fill(replay, rng, streams, blocks=12, T=5)
    out = replay.sample(4, torch.Generator().manual_seed(0))
    idx = out["indices"].unique()
    td = torch.from_numpy(rng.normal(size=(4, idx.numel())))
    replay.update_priorities(idx, td)
    for j, i in enumerate(idx.tolist()):
        a = [abs(float(x)) for x in td[:, j]]
        ref = (0.9 * max(a) + 0.1 * sum(a) / 4 + 1e-6) ** 0.9
        assert replay.priorities.tree.get(np.array([i]))[0] == pytest.approx(ref, rel=1e-12)


def test_only_complete_sequences_have_priority():
    rng = np.random.default_rng(3)
    replay = SequenceReplay(36, 2, burn_in=3, learn_len=5, stride=3, lookahead=1, alpha=0.6)
    streams = [Stream() for _ in range(2)]
    fill(replay, rng, streams, blocks=25, T=4, p_inactive=0.02)
    cap, S = replay.ring.capacity, replay.seq_len
    leaves = replay.priorities.tree.leaves()
    for c in range(2):
        n = len(streams[c])
        oldest = max(0, n - (cap - 1))
        for g in range(n):
            if g % 3:
                continue
            row = g % cap  # no column was cut: step g sits at row g mod capacity
            learn_active = any(streams[c].active[g + replay.burn_in : g + replay.burn_in + replay.learn_len])
            ok = g >= oldest and g + S <= n and learn_active
            if g >= oldest:  # older steps' rows now hold newer steps
                assert (leaves[(row // 3) * 2 + c] > 0) == ok, (c, g)


def test_blocks_without_rnn_states_are_refused():
    replay = SequenceReplay(30, 1, burn_in=1, learn_len=2, stride=1)
    block = make_block(np.random.default_rng(0), [Stream()], [0], 3, 0.0, 0.0, 0.0)
    del block["rnn_states"]
    with pytest.raises(ValueError, match="rnn_states"):
        replay.append(block, torch.tensor([0]))
    with pytest.raises(ValueError, match="multiple"):
        SequenceReplay(31, 1, burn_in=1, learn_len=2, stride=2)


def test_frame_sequences_rebuild_every_stack():
    """Sequence replay over frame storage: every observation of a sampled sequence equals the
    stacked observation the env gave (frames repeat the first one after an episode start)."""
    rng = np.random.default_rng(4)
    F, T, N = 4, 6, 2
    replay = SequenceReplay(48, N, burn_in=2, learn_len=5, stride=2, frame_stack=F, alpha=0.0)
    stacks: list[list[torch.Tensor]] = [[], []]
    last = [None, None]
    for _ in range(20):
        obs = torch.zeros(T + 1, N, F, 3, 3, dtype=torch.uint8)
        u = rng.random((T, N))
        term, trunc = torch.from_numpy(u < 0.08), torch.from_numpy((u >= 0.08) & (u < 0.14))
        for c in range(N):
            st = last[c]
            if st is None:  # reset stack: the first frame repeated
                st = torch.from_numpy(rng.integers(0, 255, (3, 3), dtype=np.uint8)).expand(F, 3, 3).clone()
                stacks[c].append(st)
            obs[0, c] = st
            for t in range(T):
                frame = torch.from_numpy(rng.integers(0, 255, (3, 3), dtype=np.uint8))
                st = (
                    frame.expand(F, 3, 3).clone()
                    if term[t, c] or trunc[t, c]
                    else torch.cat([st[1:], frame[None]])
                )
                obs[t + 1, c] = st
                stacks[c].append(st)
            last[c] = st
        block = {
            "obs": obs,
            "actions": torch.zeros(T, N, dtype=torch.int64),
            "rewards": torch.zeros(T, N),
            "terminated": term,
            "truncated": trunc,
            "is_active": torch.ones(T, N, dtype=torch.bool),
            "rnn_states": torch.zeros(T + 1, N, 2),
        }
        replay.append(block, torch.arange(N))
    out = replay.sample(64, torch.Generator().manual_seed(0))
    n = len(stacks[0]) - 1
    for b in range(64):
        c, start = int(out["columns"][b]), int(out["starts"][b])
        g0 = next(g for g in range(n - 47, n) if g % 48 == start)
        for k in range(replay.seq_len + 1):
            assert torch.equal(out["obs"][k, b], stacks[c][g0 + k]), (b, k)
