"""Prioritized replay (Schaul et al. 2016) in surge.replay.prioritized: sampling frequencies follow
the priorities (eq. 1), importance weights follow eq. 2, beta anneals, new steps get the max
priority, and overwritten or cut steps are never drawn."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from replay_streams import Stream, make_block, naive_n_step, stack_frames
from test_replay_nstep import chi2_quantile, fill

from surge.replay import PrioritizedReplay
from surge.replay.n_step import n_step_window


def all_cells(replay):
    cap, N = replay.ring.capacity, replay.ring.num_columns
    rows = torch.arange(cap).repeat_interleave(N)
    cols = torch.arange(N).repeat(cap)
    return rows, cols


def filled(seed=0, cap=40, N=3, n=3, alpha=0.6, blocks=30):
    rng = np.random.default_rng(seed)
    replay = PrioritizedReplay(cap, N, n_step=n, gamma=0.9, alpha=alpha, beta0=0.4, beta_steps=1000)
    streams = [Stream() for _ in range(N)]
    fill(replay, rng, streams, num_blocks=blocks, T=5)
    return replay, streams, rng


def test_sampleable_cells_and_only_they_have_priority():
    for seed in range(4):
        replay, _, _ = filled(seed)
        rows, cols = all_cells(replay)
        valid = n_step_window(replay.ring, rows, cols, replay.n_step, replay.gamma).valid
        pri = replay.priorities.tree.leaves()[(rows * replay.ring.num_columns + cols).numpy()]
        np.testing.assert_array_equal(pri > 0, valid.numpy())
        replay.priorities.tree.check()


def test_sampling_frequencies_match_the_priorities():
    """Chi-square of 300,000 draws against P(i) = p_i^alpha / sum p^alpha, df = cells - 1, at the
    0.999 quantile (Wilson-Hilferty): a correct iid sampler fails with probability 0.001 over seeds
    (the stratified draw has less variance than iid draws, so the test is conservative); the seed is
    fixed. Priorities p = |td| + eps are set from random TD errors through `update_priorities`."""
    replay, _, rng = filled(1, alpha=0.7)
    rows, cols = all_cells(replay)
    N = replay.ring.num_columns
    valid = n_step_window(replay.ring, rows, cols, replay.n_step, replay.gamma).valid
    idx = (rows * N + cols)[valid]
    td = torch.from_numpy(rng.exponential(size=idx.numel()) * rng.choice([-1, 1], idx.numel()))
    replay.update_priorities(idx, td)
    p = (np.abs(td.numpy()) + replay.priorities.eps) ** 0.7  # the reference, from the TD errors
    P = p / p.sum()
    draws = 300_000
    counts = np.zeros(replay.ring.capacity * N)
    gen = torch.Generator().manual_seed(5)
    for _ in range(draws // 10_000):
        out = replay.sample(10_000, gen, env_steps=0)
        counts += np.bincount(out["indices"].numpy(), minlength=counts.size)
    assert counts.sum() == counts[idx.numpy()].sum(), "drew a cell with no priority"
    expected = draws * P
    chi2 = float(((counts[idx.numpy()] - expected) ** 2 / expected).sum())
    assert chi2 < chi2_quantile(idx.numel() - 1, z=3.0902)
    # and a sampler that ignored the priorities would fail it
    flat = np.full_like(expected, draws / idx.numel())
    assert float(((flat - expected) ** 2 / expected).sum()) > chi2_quantile(idx.numel() - 1, z=3.0902)


def test_importance_weights_follow_eq_2_with_annealed_beta():
    replay, _, rng = filled(2, alpha=0.5)
    rows, cols = all_cells(replay)
    N = replay.ring.num_columns
    valid = n_step_window(replay.ring, rows, cols, replay.n_step, replay.gamma).valid
    idx = (rows * N + cols)[valid]
    td = torch.from_numpy(rng.random(idx.numel()) * 3)
    replay.update_priorities(idx, td)
    pri = {int(i): (abs(float(t)) + 1e-6) ** 0.5 for i, t in zip(idx, td, strict=True)}
    total, count = sum(pri.values()), len(pri)
    for env_steps, beta in ((0, 0.4), (500, 0.7), (1000, 1.0), (5000, 1.0)):
        assert replay.priorities.beta(env_steps) == pytest.approx(beta)
        out = replay.sample(64, torch.Generator().manual_seed(env_steps), env_steps=env_steps)
        w = [(count * pri[int(i)] / total) ** -beta for i in out["indices"]]
        ref = np.array(w) / max(w)
        np.testing.assert_allclose(out["is_weights"].numpy(), ref, rtol=1e-5)


def test_new_steps_get_the_max_priority_and_samples_match_the_naive_return():
    replay, streams, rng = filled(3, cap=64, blocks=10)
    N = replay.ring.num_columns
    rows, cols = all_cells(replay)
    valid = n_step_window(replay.ring, rows, cols, replay.n_step, replay.gamma).valid
    idx = (rows * N + cols)[valid]
    replay.update_priorities(idx[:5], torch.tensor([7.0, 0.1, 0.2, 0.3, 0.4]))
    block = make_block(rng, streams, [0], 5, 0.0, 0.0, 0.0)
    a = replay.append(block, torch.tensor([0]))
    new_leaf = int(a.old_head[0]) * N + 0
    assert replay.priorities.tree.get(np.array([new_leaf]))[0] == pytest.approx((7.0 + 1e-6) ** 0.6)
    out = replay.sample(256, torch.Generator().manual_seed(0))
    for i in range(256):
        c = int(out["columns"][i])
        g = int(out["actions"][i])
        ref = naive_n_step(streams[c], g, replay.n_step, replay.gamma)
        assert ref is not None and float(out["returns"][i]) == pytest.approx(ref[0], rel=1e-5, abs=1e-5)


def test_stale_priority_updates_do_not_revive_overwritten_steps():
    replay, streams, rng = filled(4, cap=20, N=1, blocks=3)
    out = replay.sample(8, torch.Generator().manual_seed(0))
    for _ in range(6):  # the ring wraps: the sampled steps' cells are rewritten or emptied
        replay.append(make_block(rng, streams, [0], 5, 0.0, 0.0, 0.0), torch.tensor([0]))
    rows, cols = all_cells(replay)
    replay.update_priorities(out["indices"], torch.full((8,), 100.0))
    valid = n_step_window(replay.ring, rows, cols, replay.n_step, replay.gamma).valid
    np.testing.assert_array_equal(replay.priorities.tree.leaves() > 0, valid.numpy())
    with pytest.raises(ValueError, match="finite"):
        replay.update_priorities(out["indices"][:1], torch.tensor([float("nan")]))


def test_frame_rows_whose_history_was_overwritten_lose_their_priority():
    """With frame storage the oldest F-1 rows of a wrapped column cannot rebuild their stacks: the
    appends that overwrite their history set their priority to 0 (rlpyt's off_forward)."""
    rng = np.random.default_rng(5)
    cap, N, T, F = 24, 2, 5, 4
    replay = PrioritizedReplay(cap, N, n_step=2, frame_stack=F)
    pending: dict[int, np.ndarray] = {}
    for _ in range(17):
        u = rng.random((T, N))
        newest = rng.integers(0, 255, (T + 1, N, 3, 3), dtype=np.uint8)
        # each column's first stack continues its previous block (pending) or starts a stream
        first = np.stack([pending.get(c, np.repeat(newest[0, c][None], F, 0)) for c in range(N)])
        obs = torch.from_numpy(stack_frames(newest, u < 0.1, first))
        block = {
            "obs": obs,
            "actions": torch.zeros(T, N, dtype=torch.int64),
            "rewards": torch.zeros(T, N),
            "terminated": torch.from_numpy(u < 0.05),
            "truncated": torch.from_numpy((u > 0.05) & (u < 0.1)),
            "is_active": torch.ones(T, N, dtype=torch.bool),
        }
        cols = torch.tensor([0, 1]) if rng.random() < 0.7 else torch.tensor([int(rng.integers(N))])
        replay.append({k: v[:, cols] for k, v in block.items()}, cols)
        pending.update({int(c): obs[-1, int(c)].numpy() for c in cols})
        rows, cc = all_cells(replay)
        valid = n_step_window(replay.ring, rows, cc, 2, replay.gamma).valid
        np.testing.assert_array_equal(replay.priorities.tree.leaves() > 0, valid.numpy())
    assert len(replay) > cap, "wrapped"
    assert (~valid).sum() >= F - 1
