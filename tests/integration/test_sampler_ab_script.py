"""benchmarks/sampler_ab.py, the alternating A/B of checkouts (docs/benchmarks.md): with `--train`
each run is a real training run of the config in the named placement, and an unknown placement is
refused before any run starts; with `--variant` each flag set reaches its runs' command line."""

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import sampler_ab  # noqa: E402


def test_an_unknown_placement_is_refused_with_the_configs_placements(capsys):
    with pytest.raises(SystemExit):
        sampler_ab.main(["--train", "async_fast", str(ROOT)])
    assert "async_acting_in_workers" in capsys.readouterr().err


@pytest.mark.slow
def test_train_mode_measures_a_training_run_of_the_checkout(capsys):
    results = sampler_ab.main(
        [
            "--train",
            "async_acting_in_workers",
            "--frames",
            "150000",
            "--rounds",
            "1",
            "--timeout",
            "120",
            str(ROOT),
        ]
    )
    (fps,) = results[str(ROOT)]
    assert math.isfinite(fps) and fps > 1000
    out = capsys.readouterr().out
    assert "(return " in out and "training, async_acting_in_workers" in out


def test_a_single_variant_is_refused_before_any_run(capsys):
    with pytest.raises(SystemExit):
        sampler_ab.main(["--variant=--num_workers=1", str(ROOT)])
    assert "two or more" in capsys.readouterr().err


@pytest.mark.slow
def test_each_variants_flags_reach_its_runs(capsys):
    args = ["--train", "async_acting_in_workers", "--frames", "100000", "--rounds", "1", "--timeout", "120"]
    results = sampler_ab.main([*args, "--variant=", "--variant=--num_workers=-1", str(ROOT)])
    plain, refused = results[f"{ROOT} []"], results[f"{ROOT} [--num_workers=-1]"]
    assert math.isfinite(plain[0]) and plain[0] > 1000
    assert math.isnan(refused[0])  # surge refused the variant's flag: it was on the command line
    assert "(1.000x the first)" in capsys.readouterr().out
