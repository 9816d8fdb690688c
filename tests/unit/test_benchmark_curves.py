"""The training curves of the side-by-side scripts: `dqn_atari_vs_sb3._surge_curve` picks the
first logged point past each multiple of `every` from a run's TensorBoard events, and
`plot_curves.read_curves` reads the printed curve lines back."""

import sys
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from dqn_atari_vs_sb3 import _surge_curve  # noqa: E402
from plot_curves import read_curves  # noqa: E402


def test_surge_curve_takes_the_first_point_past_each_multiple(tmp_path):
    w = SummaryWriter(str(tmp_path / "0"))
    logged = {step: step / 10 for step in range(0, 1001, 70)}  # 0, 70, ..., 980
    for step, value in logged.items():
        w.add_scalar("episode/return_mean", value, step)
        w.add_scalar("perf/env_steps", 1.0, step)  # another tag: ignored
    w.close()
    steps = sorted(logged)
    expected = [
        (min(s for s in steps if s >= m), logged[min(s for s in steps if s >= m)]) for m in (300, 600, 900)
    ]
    assert _surge_curve(tmp_path, 300) == expected


def test_read_curves_reads_each_seed_and_side(tmp_path):
    out = tmp_path / "run.out"
    out.write_text(
        "seed 1 surge:   444.4 env frames/s, ...\n"
        "seed 1 surge curve (env frames, training return): [[12288, 2.64], [16000, 2.42]]\n"
        "seed 2 sb3   curve (env frames, training return): [[4000, 1.33]]\n"
        "2026-11-25 11:50:06\n"
    )
    assert read_curves([str(out)]) == {
        "surge seed 1": [(12288, 2.64), (16000, 2.42)],
        "sb3 seed 2": [(4000, 1.33)],
    }
