"""The dummy sampler (`--algo=DUMMY_SAMPLER`, `surge bench`): random actions through the same
sampling machinery for `--sample_env_frames` env frames, no learning, no experiment folder."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(
    r"DUMMY_SAMPLER cartpole: (\d+) env frames sampled; (\d+) env frames in ([\d.]+) s = "
    r"([\d.]+) env frames/s"
)


def _bench(tmp_path, *flags, timeout=180):
    return subprocess.run(
        [sys.executable, "-m", "surge.cli", "bench", "--env=cartpole", f"--train_dir={tmp_path}", *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("serial_mode", ["False", "True"])
@pytest.mark.slow
def test_surge_bench_samples_the_asked_frames_and_trains_nothing(tmp_path, serial_mode):
    frames = 100_000
    out = _bench(
        tmp_path,
        "--experiment=b",
        f"--serial_mode={serial_mode}",
        f"--sample_env_frames={frames}",
        "--num_workers=2",
        "--num_envs_per_worker=4",
        "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
    )
    assert out.returncode == 0, out.stderr[-3000:]
    m = LINE.search(out.stdout)
    assert m, out.stdout[-3000:]
    sampled, measured = int(m.group(1)), int(m.group(2))
    seconds, rate = float(m.group(3)), float(m.group(4))
    assert frames <= sampled < 3 * frames and 0 < measured <= sampled
    assert seconds > 0 and rate == pytest.approx(measured / seconds, rel=0.05)
    # no learning: nothing saved, no experiment folder written
    assert not list(tmp_path.rglob("*.pth"))


def test_dummy_sampler_refuses_a_bad_frame_count_before_starting(tmp_path):
    out = _bench(tmp_path, "--sample_env_frames=-5", timeout=60)
    assert out.returncode == 2
    assert "--sample_env_frames" in out.stderr
