"""benchmarks/atari_obs_type_ab.py: a short run times both base observation types, alternating, and
leaves the env family's own setting as it found it."""

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("ale_py")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import atari_obs_type_ab  # noqa: E402


def test_a_short_run_reports_both_observation_types(capsys, monkeypatch):
    import surge.envs.atari as atari

    own = atari.BASE_OBS_TYPE
    monkeypatch.setattr(atari, "BASE_OBS_TYPE", own)  # restored after the test whatever happens
    assert atari_obs_type_ab.main(["--rounds", "2", "--steps", "30"]) == 0
    assert atari.BASE_OBS_TYPE == own
    out = capsys.readouterr().out
    for t in ("rgb", "grayscale", "ram"):
        m = re.search(rf"^{t}: ([\d.]+) ([\d.]+) µs per env frame, median ([\d.]+)$", out, re.M)
        assert m, out
        assert float(m[3]) == pytest.approx((float(m[1]) + float(m[2])) / 2, abs=0.06)
    for t in ("grayscale", "ram"):
        assert re.search(rf"^{t} / rgb: [\d.]+$", out, re.M), out
