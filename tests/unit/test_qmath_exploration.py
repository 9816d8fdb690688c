"""ε schedules, per-actor ε (Horgan et al. 2018) and ε-greedy selection."""

import pytest
import torch

from surge.learning.exploration import epsilon_greedy, linear_schedule, per_actor_epsilon


def test_per_actor_epsilon_matches_the_ape_x_formula():
    N = 8
    assert per_actor_epsilon(0, N) == pytest.approx(0.4)
    assert per_actor_epsilon(N - 1, N) == pytest.approx(0.4**8)  # ε^(1+α) with α = 7
    ids = torch.arange(N)
    ref = [0.4 ** (1 + 7 * i / (N - 1)) for i in range(N)]
    assert per_actor_epsilon(ids, N).tolist() == pytest.approx(ref, rel=1e-6)
    assert per_actor_epsilon(3, N, eps=0.5, alpha=3.0) == pytest.approx(0.5 ** (1 + 3 * 3 / 7))
    assert per_actor_epsilon(0, 1) == pytest.approx(0.4)  # one actor: ε
    with pytest.raises(ValueError, match="num_actors"):
        per_actor_epsilon(0, 0)
    with pytest.raises(ValueError, match="eps"):
        per_actor_epsilon(0, 4, eps=1.5)


def test_linear_schedule_anneals_then_holds():
    f = linear_schedule(1.0, 0.05, 1000)
    assert f(0) == 1.0
    assert f(500) == pytest.approx(0.525)
    assert f(1000) == pytest.approx(0.05)
    assert f(10**9) == pytest.approx(0.05)
    assert linear_schedule(1.0, 0.1, 0)(0) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="steps"):
        linear_schedule(1.0, 0.0, -1)


def test_epsilon_zero_is_greedy_over_legal_actions():
    q = torch.tensor([[1.0, 5.0, 2.0], [3.0, 0.0, 9.0]])
    assert epsilon_greedy(q, 0.0).tolist() == [1, 2]
    mask = torch.tensor([[True, False, True], [True, True, False]])
    assert epsilon_greedy(q, 0.0, mask).tolist() == [2, 0]


def test_epsilon_one_is_uniform_over_legal_actions_and_never_illegal():
    g = torch.Generator().manual_seed(0)
    B = 40000
    q = torch.zeros(B, 4)
    q[:, 3] = 10.0
    mask = torch.tensor([[True, False, True, True]]).expand(B, 4)
    a = epsilon_greedy(q, 1.0, mask, generator=g)
    counts = torch.bincount(a, minlength=4).double() / B
    assert counts[1].item() == 0.0
    for k in (0, 2, 3):  # each 1/3: 6 standard deviations is 0.014
        assert counts[k].item() == pytest.approx(1 / 3, abs=0.014)


def test_per_row_epsilon_explores_at_each_rows_rate():
    g = torch.Generator().manual_seed(1)
    B = 20000
    q = torch.zeros(B, 2)
    q[:, 0] = 1.0
    eps = torch.where(torch.arange(B) < B // 2, 0.0, 0.6)
    a = epsilon_greedy(q, eps, generator=g)
    assert a[: B // 2].sum().item() == 0  # ε = 0 rows are greedy
    # ε = 0.6 rows pick action 1 with probability 0.6 · 1/2 = 0.3
    assert a[B // 2 :].double().mean().item() == pytest.approx(0.3, abs=0.02)
