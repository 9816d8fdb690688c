"""benchmarks/gpu_profile.py, torch's profiler over the GPU roles' stand-ins: its short run on the
CPU (the script's own check) times an inference pass and a learner batch of cartpole and prints the
operations that took their CPU, the forward pass's linear layers among them."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_profile_names_each_roles_operations_and_times_a_call():
    out = subprocess.run(
        [sys.executable, "benchmarks/gpu_profile.py", "--config", "cartpole", "--calls", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    # one section per role, the cartpole config's sizes: 2 workers x 20 envs a pass, 512 samples a batch
    assert "### inference: 40 rows a call" in text and "### learner: 512 rows a call" in text
    assert "CUDA runtime calls a call: none" in text  # no GPU: no CUDA rows
    for section in text.split("### ")[1:]:
        wall = float(section.split("wall ")[1].split(" ms")[0])
        assert wall > 0
        assert "aten::addmm" in section or "aten::linear" in section  # the MLP's layers were profiled
