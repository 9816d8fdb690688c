"""`--runner=slurm` against a real single-node Slurm on localhost (tests/slurm_local.py): the 2 x 2
CartPole sweep is submitted with sbatch; Ctrl+C on the runner cancels pending jobs and stops the
running ones, which save and resume on the next run; the sweep completes; a third run submits nothing.
Skipped only when Slurm's daemons cannot run here (the reason says why)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
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
                   "--num_torch_threads=1 --train_for_env_steps=20000 --report_interval_sec=0.5")
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
        # Ctrl+C once the first experiment trains: pending jobs are cancelled, running ones save and stop
        runner = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path
        )
        log0 = tmp_path / "td" / "sweep" / "cartpole" / "00_cartpole_l.rat_0.001_see_1" / "surge_log.txt"
        try:
            deadline = time.monotonic() + 240
            while not (log0.exists() and "Env frames/s" in log0.read_text()):
                assert runner.poll() is None, runner.communicate()[0]
                assert time.monotonic() < deadline
                time.sleep(0.1)
            runner.send_signal(signal.SIGINT)
            out, _ = runner.communicate(timeout=120)
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
        assert runner.returncode == 130, out
        assert "interrupted  " in out
        queue = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True, timeout=30)
        assert queue.returncode == 0 and queue.stdout.strip() == ""
        cartpole = tmp_path / "td" / "sweep" / "cartpole"
        stopped = [
            f for f in cartpole.iterdir() if not (f / "done").exists() and list(f.glob("checkpoint_p0/*.pth"))
        ]
        assert stopped, out  # saved a checkpoint when stopped

        res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=400, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        assert res.stderr.count("Submitted ") == 4 and "Sweep: 4 done." in res.stderr
        for f in stopped:
            assert "Resumed from env frame" in (f / "surge_log.txt").read_text()
        folders = sorted((tmp_path / "td" / "sweep" / "cartpole").iterdir())
        assert [f.name for f in folders] == [
            "00_cartpole_l.rat_0.001_see_1",
            "01_cartpole_l.rat_0.001_see_2",
            "02_cartpole_l.rat_0.0003_see_1",
            "03_cartpole_l.rat_0.0003_see_2",
        ]
        for f in folders:
            assert (f / "done").read_text() == "env_frames=20000\n"
        finished = [
            o for o in workdir.glob("sbatch_*-slurm-*.out") if "Training finished: 20000" in o.read_text()
        ]
        assert len(finished) == 4  # one job of each experiment (the interrupted ones: their second)
        assert (workdir / "scancel.sh").read_text().startswith("scancel ")

        again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=200, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert "Submitted " not in again.stderr and "Sweep: 4 skipped." in again.stderr
        queue = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True, timeout=30)
        assert queue.returncode == 0 and queue.stdout.strip() == ""
    finally:
        cluster.__exit__(None, None, None)
