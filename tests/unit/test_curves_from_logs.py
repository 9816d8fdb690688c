"""benchmarks/curves_from_logs.py reads the curves out of both frameworks' logs as they write them."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from curves_from_logs import main, sf_curve, surge_curve  # noqa: E402

SURGE = """[2026-12-03 00:03:03,787][INFO] Env frames/s (10 s, 1 min, 5 min): 0.0, 0.0, 0.0. Total env frames: 0 (0.0% of 5000000, ETA measuring).
[2026-12-03 00:03:05,869][INFO] Env frames/s (10 s, 1 min, 5 min): 5109.1, 6471.7, 6689.0. Total env frames: 746720 (14.9% of 5000000, ETA 10m 36s). Episode return: 1.88, length: 195.5 env steps (last 100). Policy lag (min/avg/max): 0/0.7/1.
[2026-12-03 00:03:07,869][INFO] Env frames/s (10 s, 1 min, 5 min): 5109.1, 6471.7, 6689.0. Total env frames: 760000 (15.2% of 5000000, ETA 10m 30s). Episode return: -2.50, length: 195.5 env steps (last 100).
"""
SF = """[2026-11-21 13:28:11,150][02012] Fps is (10 sec: 2048.0, 60 sec: 2048.0, 300 sec: 2048.0). Total num frames: 8192. Throughput: 0: 2000.0. Samples: 8192. Policy #0 lag: (min: 0.0, avg: 0.0, max: 0.0)
[2026-11-21 13:28:13,150][02012] Avg episode reward: [(0, '-1.525')]
[2026-11-21 13:28:16,150][02012] Fps is (10 sec: 2048.0, 60 sec: 2048.0, 300 sec: 2048.0). Total num frames: 16384. Throughput: 0: 2000.0. Samples: 16384. Policy #0 lag: (min: 0.0, avg: 0.0, max: 0.0)
[2026-11-21 13:28:16,150][02012] Avg episode reward: [(0, '0.75')]
"""


def test_both_logs_give_frames_and_returns(tmp_path):
    (tmp_path / "s.err").write_text(SURGE)
    (tmp_path / "sf.txt").write_text(SF)
    assert surge_curve(tmp_path / "s.err") == [(746720, 1.88), (760000, -2.5)]
    assert sf_curve(tmp_path / "sf.txt", scale=100.0) == [(8192, -152.5), (16384, 75.0)]


def test_run_folders_print_curve_lines_with_the_round_as_seed(tmp_path, capsys):
    (tmp_path / "x_surge_async_round2").mkdir()
    (tmp_path / "x_surge_async_round2" / "surge_console.txt.err").write_text(SURGE)
    (tmp_path / "x_sf_async_round1" / "sf").mkdir(parents=True)
    (tmp_path / "x_sf_async_round1" / "sf" / "sf_log.txt").write_text(SF)
    assert main([str(tmp_path / "x_surge_async_round2"), str(tmp_path / "x_sf_async_round1")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0]
        == "seed 2 x_surge_async_round2 curve (env frames, training return): [[746720, 1.88], [760000, -2.5]]"
    )
    assert out[1].startswith("seed 1 x_sf_async_round1 curve") and out[1].endswith(
        "[[8192, -1.525], [16384, 0.75]]"
    )
