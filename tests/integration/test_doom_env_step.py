"""benchmarks/doom_env_step.py: doom_benchmark's env stack stepped alone reports its CPU per env
step and per env frame (per step over the config's frameskip)."""

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("vizdoom")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import doom_env_step  # noqa: E402


def test_a_short_run_reports_cpu_per_step_and_per_frame(capsys):
    assert doom_env_step.main(["--steps", "40"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.search(
        r"40 steps, wall ([\d.]+) µs/step, CPU ([\d.]+) µs/step \(([\d.]+) µs per env frame at frameskip (\d+)\)",
        line,
    )
    assert m, line
    wall, cpu, per_frame, frameskip = float(m[1]), float(m[2]), float(m[3]), int(m[4])
    assert frameskip == 4  # doom_benchmark's, as the run counts env frames
    assert wall > 0 and cpu > 0
    # CPU per step is printed to 0.1 µs and per frame to 0.01 µs: the two roundings bound the gap.
    assert per_frame == pytest.approx(cpu / frameskip, abs=0.05 / frameskip + 0.005)
