"""Each example script runs (briefly) as a user would run it."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("placement", ["--serial_mode=True", "--serial_mode=False"])
@pytest.mark.slow
def test_custom_env_example_trains_and_learns_to_walk(tmp_path, placement):
    # fmt: off
    cmd = [sys.executable, str(ROOT / "examples" / "train_custom_env.py"), "--experiment=c", f"--train_dir={tmp_path}",
           "--train_for_env_steps=30000", "--num_workers=1", "--seed=0", "--report_interval_sec=1", placement,
           "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False"]
    # fmt: on
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    ckpt = sorted((tmp_path / "c" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    state = torch.load(ckpt, weights_only=True)
    assert state["env_frames"] >= 30000
    assert "encoder.net.0.weight" in state["model"]  # the custom encoder was used
    # walking right takes 7 steps: return 1 - 0.06; a random walk scores far lower
    last = [line for line in out.stderr.splitlines() if "Episode return" in line][-1]
    assert float(last.split("Episode return: ")[1].split(",")[0]) > 0.8, last
