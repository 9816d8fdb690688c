"""Issue 21's Done-when: rl_games 1.6.5's `configs/ppo_cartpole.yaml`, as its wheel ships it, trains
with `surge train --cfg=FILE` plus a budget flag and reaches the file's own `score_to_win` (400):
the run stops itself, saying so in its log, with a final checkpoint and the `done` marker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

rl_games = pytest.importorskip("rl_games")

ROOT = Path(__file__).resolve().parents[2]
CARTPOLE = Path(rl_games.__file__).parent / "configs" / "ppo_cartpole.yaml"


@pytest.mark.slow
def test_ppo_cartpole_as_shipped_reaches_its_score_to_win(tmp_path):
    from surge.app.rl_games.translation import translate
    from surge.cfg.yaml_files import read_yaml

    flags = translate(read_yaml(str(CARTPOLE)), str(CARTPOLE)).values  # the file translates whole
    assert flags["score_to_win"] == 400
    cmd = [sys.executable, "-m", "surge.cli", "train", f"--cfg={CARTPOLE}", "--train_for_env_steps=400000"]
    cmd += [f"--train_dir={tmp_path}", "--serial_mode=True", "--num_torch_threads=1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    folder = tmp_path / "cartpole_vel_info"
    log = (folder / "surge_log.txt").read_text()
    assert proc.returncode == 0, log[-3000:] + proc.stderr[-2000:]
    assert "rl_games file" in log and "params.torch_threads" in log  # keys without effect, in the run's log
    won = re.search(r"mean return over its last (\d+) episodes is ([0-9.]+) >= --score_to_win=400", log)
    assert won, log[-3000:]
    assert float(won.group(2)) >= 400.0
    assert (folder / "done").exists()
    assert list((folder / "checkpoint_p0").glob("*.pth"))
