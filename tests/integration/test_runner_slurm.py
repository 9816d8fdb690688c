"""`--runner=slurm` against a real single-node Slurm on localhost (tests/slurm_local.py): the 2 x 2
CartPole sweep is submitted with sbatch, waited for and completes; a second run submits nothing.
Skipped only when Slurm's daemons cannot run here (the reason says why)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.slurm_local import SlurmUnavailable, local_slurm

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_cartpole_2x2_sweep_completes_on_local_slurm(tmp_path):
    (tmp_path / "runner_slurm_2x2.py").write_text(
        textwrap.dedent(
            """
            from surge.runner import Experiment, ParamGrid, RunDescription
            cmd = ("python -m surge.train --env=CartPole-v1 --serial_mode=True --num_workers=1 "
                   "--num_torch_threads=1 --train_for_env_steps=10000")
            grid = ParamGrid([("learning_rate", [0.001, 0.0003]), ("seed", [1, 2])])
            RUN_DESCRIPTION = RunDescription("sweep", [Experiment("cartpole", cmd, grid)])
            """
        )
    )
    try:
        cluster = local_slurm(tmp_path / "slurm")
        slurm_env = cluster.__enter__()
    except SlurmUnavailable as e:
        pytest.skip(f"Slurm cannot run here: {e}")
    try:
        env = dict(os.environ, OMP_NUM_THREADS="1", **slurm_env)
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO), env.get("PYTHONPATH", "")])
        workdir = tmp_path / "jobs"
        argv = [
            sys.executable,
            "-m",
            "surge.runner.run",
            "--run=runner_slurm_2x2",
            "--runner=slurm",
            f"--train_dir={tmp_path / 'td'}",
            f"--slurm_workdir={workdir}",
            "--slurm_gpus_per_job=0",
            "--slurm_cpus_per_gpu=1",
            "--pause_between=0",
        ]
        res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=400, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        assert res.stderr.count("Submitted ") == 4 and "Sweep: 4 done." in res.stderr
        folders = sorted((tmp_path / "td" / "sweep" / "cartpole").iterdir())
        assert [f.name for f in folders] == [
            "00_cartpole_l.rat_0.001_see_1",
            "01_cartpole_l.rat_0.001_see_2",
            "02_cartpole_l.rat_0.0003_see_1",
            "03_cartpole_l.rat_0.0003_see_2",
        ]
        for f in folders:
            assert (f / "done").read_text() == "env_frames=10000\n"
        outputs = sorted(workdir.glob("sbatch_*.sh-slurm-*.out"))
        assert len(outputs) == 4 and all(
            "Training finished: 10000 env frames." in o.read_text() for o in outputs
        )
        assert (workdir / "scancel.sh").read_text().startswith("scancel ")

        again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=200, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert "Submitted " not in again.stderr and "Sweep: 4 skipped." in again.stderr
        queue = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True, timeout=30)
        assert queue.returncode == 0 and queue.stdout.strip() == ""
    finally:
        cluster.__exit__(None, None, None)
