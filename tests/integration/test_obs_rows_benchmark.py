"""benchmarks/obs_rows.py, a short run: both ways of writing a split's observations are timed for
each size and agent count, and the line reports their ratio."""

import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import obs_rows  # noqa: E402


def test_a_short_run_prints_both_timings_and_their_ratio(monkeypatch, capsys):
    monkeypatch.setattr(obs_rows, "SHAPES", [((4,), np.float32), ((3, 8, 8), np.uint8)])
    obs_rows.main()
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4  # 2 sizes x (8, 64) agents
    for line in lines:
        m = re.search(r"rows +([\d.]+) µs, stacked +([\d.]+) µs, rows / stacked ([\d.]+)", line)
        assert m, line
        rows, stacked, ratio = (float(x) for x in m.groups())
        assert rows > 0 and stacked > 0
        # the times are printed to 0.1 µs, the ratio to 0.01 from the unrounded times
        assert abs(ratio - rows / stacked) <= ratio * (0.05 / rows + 0.05 / stacked) + 0.005
