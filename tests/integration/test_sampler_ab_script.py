"""benchmarks/sampler_ab.py, the alternating A/B of checkouts (docs/benchmarks.md): with `--train`
each run is a real training run of the config in the named placement, and an unknown placement is
refused before any run starts."""

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
    (fps,) = results[ROOT]
    assert math.isfinite(fps) and fps > 1000
    out = capsys.readouterr().out
    assert "(return " in out and "training, async_acting_in_workers" in out
