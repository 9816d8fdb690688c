"""`mean_stats` (one torch reduction for all of a batch's statistics) against the per-key
expression it replaced in `Learner.train_batch`: the same floats, bit for bit."""

import torch

from surge.algorithms.appo.learner import mean_stats


def _old(steps):
    return {k: float(torch.stack([s[k] for s in steps]).mean()) for k in (steps[0] if steps else ())}


def test_mean_stats_equal_the_per_key_means():
    g = torch.Generator().manual_seed(0)
    for n_steps in (1, 2, 3, 5, 8, 17, 40):
        for _ in range(50):
            steps = [
                {
                    k: torch.randn((), generator=g) * 10.0 ** int(torch.randint(-6, 6, (), generator=g))
                    for k in "abcdefghijklm"
                }
                for _ in range(n_steps)
            ]
            got = mean_stats(steps)
            assert list(got) == list("abcdefghijklm")
            assert got == _old(steps)
    assert mean_stats([]) == {}


def test_mixed_dtypes_keep_each_key_in_its_own_dtype():
    # a float64 statistic next to float32 ones: not promoted to a common dtype before the mean
    steps = [{"a": torch.tensor(0.1), "b": torch.tensor(1 / 3, dtype=torch.float64)} for _ in range(3)]
    assert mean_stats(steps) == _old(steps)
    assert mean_stats(steps)["b"] == 1 / 3
