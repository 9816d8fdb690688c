"""The arithmetic of the benchmark scripts whose figures go in docs/benchmarks.md: the scaling cost
model's fit and prediction (benchmarks/scaling.py) and the peers script's slope over whole
collect-then-train cycles (benchmarks/peers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
scaling = pytest.importorskip("scaling")
peers = pytest.importorskip("peers")


def test_the_envs_fit_recovers_the_costs_that_made_the_points():
    a, b = 40.0, 300.0  # µs per frame, µs per split step
    rows = [(n, a + b / (n / 4)) for n in (8, 32, 128, 256)]
    fa, fb = scaling.fit_envs(rows)
    assert fa == pytest.approx(a) and fb == pytest.approx(b)


def test_the_model_is_bound_by_the_cores_or_by_the_one_learner():
    row = {"cpu_total": 80.0, "cpu_learner": 25.0}
    assert scaling.predict_fps(row, 1, 1.0) == pytest.approx(1e6 / 80)
    assert scaling.predict_fps(row, 2, 0.9) == pytest.approx(2 * 0.9 * 1e6 / 80)
    assert scaling.predict_fps(row, 16, 1.0) == pytest.approx(1e6 / 25)  # the learner's process


def test_a_variant_replaces_the_flags_it_names_and_keeps_the_rest():
    base = ["--env=CartPole-v1", "--num_workers=2", "--num_envs_per_worker=20", "--encoder_mlp_layers", "512"]
    out = scaling._with(base, num_workers=1, num_policies=4)
    assert out.count("--num_workers=1") == 1 and "--num_workers=2" not in out
    assert "--num_policies=4" in out and "--env=CartPole-v1" in out and "512" in out


def test_a_synchronous_runs_rate_is_taken_between_the_ends_of_its_collections():
    # 1000 frames collected in 1 s, then 3 s of training with the count standing still, each cycle;
    # a report every second: the rate over whole cycles is 1000 frames / 4 s
    points, frames = [], 0
    for cycle in range(4):
        t0 = cycle * 4.0
        frames += 1000
        points += [(t0 + 1, frames), (t0 + 2, frames), (t0 + 3, frames), (t0 + 4, frames)]
    assert peers.cycle_slope(points, default=-1.0) == pytest.approx(250.0)
    # no plateaus (cycles shorter than a report): the default (first to last report) is kept
    assert peers.cycle_slope([(0.0, 0), (1.0, 10), (2.0, 20)], default=7.0) == 7.0


def test_a_runs_rate_ends_at_its_last_frames_not_at_its_closing_lines():
    compare = pytest.importorskip("compare_sample_factory")
    # 1000 frames a second for 10 s, then two lines with the final count during 1.5 s of shut-down
    points = [(float(t), 1000 * t) for t in range(11)] + [(11.0, 10_000), (11.5, 10_000)]
    assert compare._slope(points) == pytest.approx(1000.0)
    # reports before the first frame are not the start
    assert compare._slope([(0.0, 0), (2.0, 0), (3.0, 500), (4.0, 1500)]) == pytest.approx(1000.0)
