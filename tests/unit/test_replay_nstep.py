"""Uniform n-step replay (surge.replay.uniform, surge.replay.n_step) against naive loops over
random streams with terminated and truncated ends, inactive steps, several columns appended in
random subsets (as surge's routing delivers them), cuts (a replaced worker) and ring wrap-around."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from replay_streams import Stream, make_block, naive_n_step, obs_id

from surge.replay import UniformReplay
from surge.replay.n_step import n_step_window


def fill(replay, rng, streams, num_blocks, T, cuts=True, p_inactive=0.03):
    N = replay.ring.num_columns
    for _ in range(num_blocks):
        cols = sorted(rng.choice(N, size=rng.integers(1, N + 1), replace=False).tolist())
        new = torch.zeros(len(cols), dtype=torch.bool)
        if cuts:
            for i, c in enumerate(cols):
                if len(streams[c]) and rng.random() < 0.1:  # worker replaced: a new stream id
                    new[i] = True
                    streams[c].cut_after.add(len(streams[c]) - 1)
        block = make_block(rng, streams, cols, T, p_term=0.08, p_trunc=0.05, p_inactive=p_inactive)
        replay.append(block, torch.tensor(cols), new)


def stored_steps(streams, col, capacity):
    """Steps of column `col` still in the ring (the newest capacity - 1), by the naive rule."""
    n = len(streams[col])
    return range(max(0, n - (capacity - 1)), n)


@pytest.mark.parametrize("n, capacity, T", [(1, 40, 5), (3, 23, 5), (5, 64, 7), (4, 17, 8)])
def test_every_cell_matches_the_naive_n_step_return(n, capacity, T):
    rng = np.random.default_rng(n * 100 + capacity)
    gamma, N = 0.9, 4
    replay = UniformReplay(capacity, N, n_step=n, gamma=gamma)
    streams = [Stream() for _ in range(N)]
    fill(replay, rng, streams, num_blocks=40, T=T)
    assert any(len(s) > capacity for s in streams), "the ring wrapped"
    ring = replay.ring
    rows = torch.arange(capacity).repeat_interleave(N)
    cols = torch.arange(N).repeat(capacity)
    w = n_step_window(ring, rows, cols, n, gamma)
    got = {}
    for i in range(rows.numel()):
        r, c = int(rows[i]), int(cols[i])
        g = int(ring.obs.data[r, c, 0].item() - 1000 * c)
        if w.valid[i]:
            got[(c, g)] = (float(w.returns[i]), float(w.discounts[i]), int(w.next_rows[i]), int(w.n_steps[i]))
    expected = {}
    for c in range(N):
        for g in stored_steps(streams, c, capacity):
            ref = naive_n_step(streams[c], g, n, gamma)
            if ref is not None:
                expected[(c, g)] = ref
    assert set(got) == set(expected)
    kinds = {(d == 0.0, nxt == g + L - 1) for (c, g), (G, d, nxt, L) in expected.items()}
    assert {(True, False), (False, True), (False, False)} <= kinds, "terminated, truncated and full windows"
    for key, (G, disc, next_row, L) in got.items():
        c = key[0]
        eG, edisc, enext, eL = expected[key]
        assert G == pytest.approx(eG, rel=1e-5, abs=1e-5)
        assert disc == pytest.approx(edisc, rel=1e-6)
        assert L == eL
        assert ring.obs.data[next_row, c, 0].item() == obs_id(c, enext)


def test_sample_returns_sampleable_steps_with_their_fields():
    rng = np.random.default_rng(0)
    gamma, n, N, cap = 0.95, 3, 3, 30
    replay = UniformReplay(cap, N, n_step=n, gamma=gamma)
    streams = [Stream() for _ in range(N)]
    fill(replay, rng, streams, num_blocks=30, T=6)
    out = replay.sample(512, torch.Generator().manual_seed(1))
    assert out["obs"].shape == (512, 1) and out["returns"].dtype == torch.float32
    for i in range(512):
        c = int(out["columns"][i])
        g = int(out["obs"][i, 0].item() - 1000 * c)
        assert g in stored_steps(streams, c, cap)
        ref = naive_n_step(streams[c], g, n, gamma)
        assert ref is not None, "sampled a step that is not sampleable"
        assert int(out["actions"][i]) == g
        assert float(out["returns"][i]) == pytest.approx(ref[0], rel=1e-5, abs=1e-5)
        assert float(out["discounts"][i]) == pytest.approx(ref[1], rel=1e-6)
        assert out["next_obs"][i, 0].item() == obs_id(c, ref[2])
        assert int(out["indices"][i]) == int(out["rows"][i]) * N + c


def test_uniform_sampling_frequencies_are_flat():
    """Every sampleable step equally likely: chi-square over the sampleable cells (df = cells - 1)
    against the 0.999 quantile (Wilson-Hilferty), i.e. a correct sampler fails with probability
    0.001 over seeds; the seed is fixed."""
    rng = np.random.default_rng(3)
    N, cap = 3, 40
    replay = UniformReplay(cap, N, n_step=2, gamma=0.9)
    streams = [Stream() for _ in range(N)]
    fill(replay, rng, streams, num_blocks=12, T=5, cuts=False)
    rows = torch.arange(cap).repeat_interleave(N)
    cols = torch.arange(N).repeat(cap)
    valid = n_step_window(replay.ring, rows, cols, 2, 0.9).valid
    k = int(valid.sum())
    draws = 200_000
    out = replay.sample(draws, torch.Generator().manual_seed(7))
    counts = np.bincount(out["indices"].numpy(), minlength=cap * N)
    idx = (rows * N + cols)[valid].numpy()
    assert counts.sum() == counts[idx].sum(), "a non-sampleable cell was drawn"
    expected = draws / k
    chi2 = float(((counts[idx] - expected) ** 2 / expected).sum())
    assert chi2 < chi2_quantile(k - 1, z=3.0902)


def chi2_quantile(df: int, z: float) -> float:
    """Upper quantile of chi-square(df) for the standard-normal quantile z (Wilson-Hilferty 1931)."""
    return df * (1 - 2 / (9 * df) + z * (2 / (9 * df)) ** 0.5) ** 3


def test_nothing_sampleable_raises_and_newest_steps_wait():
    replay = UniformReplay(20, 1, n_step=3, gamma=0.9)
    streams = [Stream()]
    rng = np.random.default_rng(0)
    block = make_block(rng, streams, [0], 2, p_term=0.0, p_trunc=0.0, p_inactive=0.0)
    replay.append(block, torch.tensor([0]))
    with pytest.raises(ValueError, match="too few sampleable"):
        replay.sample(4)
    block = make_block(rng, streams, [0], 2, p_term=0.0, p_trunc=0.0, p_inactive=0.0)
    replay.append(block, torch.tensor([0]))
    out = replay.sample(64, torch.Generator().manual_seed(0))
    assert set(out["actions"].tolist()) == {0, 1}, "steps 2 and 3 wait for their third step"


def test_bad_blocks_are_refused():
    replay = UniformReplay(8, 2, n_step=1)
    rng = np.random.default_rng(0)
    block = make_block(rng, [Stream(), Stream()], [0, 1], 3, 0.1, 0.1, 0.0)
    with pytest.raises(ValueError, match="distinct"):
        replay.append(block, torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="distinct"):
        replay.append(block, torch.tensor([0, 2]))
    bad = dict(block, rewards=block["rewards"].clone())
    bad["rewards"][0, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        replay.append(bad, torch.tensor([0, 1]))
    bad = dict(block, obs=block["obs"].clone())
    bad["obs"][1, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="non-finite observation"):
        replay.append(bad, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="obs must be"):
        replay.append(dict(block, obs=block["obs"][:-1]), torch.tensor([0, 1]))
    long = make_block(rng, [Stream(), Stream()], [0, 1], 8, 0.1, 0.1, 0.0)
    with pytest.raises(ValueError, match="capacity"):
        replay.append(long, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="n_step"):
        UniformReplay(8, 2, n_step=0)


def test_prepare_batch_flags_are_read():
    """A block as `LearnerBase.prepare_batch` gives it: dones and trunc float32, no terminated."""
    replay = UniformReplay(10, 1, n_step=2, gamma=0.5)
    block = {
        "obs": torch.arange(5.0).reshape(5, 1, 1),
        "actions": torch.zeros(4, 1, dtype=torch.int64),
        "rewards": torch.ones(4, 1),
        "dones": torch.tensor([[0.0], [1.0], [0.0], [1.0]]),
        "trunc": torch.tensor([[0.0], [1.0], [0.0], [0.0]]),
        "is_active": torch.ones(4, 1, dtype=torch.bool),
    }
    replay.append(block, torch.tensor([0]))
    w = n_step_window(replay.ring, torch.arange(4), torch.zeros(4, dtype=torch.int64), 2, 0.5)
    assert w.valid.tolist() == [True, True, True, True]
    assert w.returns.tolist() == [1.5, 1.0, 1.5, 1.0]
    # step 1 truncated: bootstraps from its own obs; step 3 terminated: discount 0
    assert w.discounts.tolist() == [0.25, 0.5, 0.0, 0.0]
    assert w.next_rows.tolist() == [1, 1, 4, 4]  # after a termination: the next row (discount 0)


def test_dict_observations_are_stored_per_key():
    replay = UniformReplay(12, 2, n_step=1, gamma=0.9)
    T, n = 4, 2
    obs = {
        "pos": torch.arange((T + 1) * n * 2, dtype=torch.float32).reshape(T + 1, n, 2),
        "action_mask": torch.rand(T + 1, n, 3) > 0.5,
    }
    block = {
        "obs": obs,
        "actions": torch.zeros(T, n, dtype=torch.int64),
        "rewards": torch.zeros(T, n),
        "terminated": torch.zeros(T, n, dtype=torch.bool),
        "truncated": torch.zeros(T, n, dtype=torch.bool),
        "is_active": torch.ones(T, n, dtype=torch.bool),
    }
    replay.append(block, torch.tensor([1, 0]))
    out = replay.sample(50, torch.Generator().manual_seed(0))
    for i in range(50):
        r, c = int(out["rows"][i]), int(out["columns"][i])
        j = 0 if c == 1 else 1  # the block's index of column c
        assert torch.equal(out["obs"]["pos"][i], obs["pos"][r, j])
        assert torch.equal(out["next_obs"]["action_mask"][i], obs["action_mask"][r + 1, j])
        assert out["obs"]["action_mask"].dtype == torch.bool
