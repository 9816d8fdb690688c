"""`python -m surge.runner.run --runner=processes`: failures reported with their logs' tail and the
exit code; bad flags refused before anything starts; a 2 x 2 CartPole sweep interrupted by SIGINT
leaves no process behind and resumes without repeating finished experiments."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from surge.runner.run import main

REPO = Path(__file__).resolve().parents[2]


def _write_module(tmp_path: Path, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO), env.get("PYTHONPATH", "")])
    return env


def _runner(tmp_path: Path, module: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "surge.runner.run",
        f"--run={module}",
        "--runner=processes",
        f"--train_dir={tmp_path / 'td'}",
        *extra,
    ]


def _processes_under(path: Path) -> list[psutil.Process]:
    """Live processes whose command line mentions `path` (the sweep's train_dir)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and any(
                str(path) in a for a in p.info["cmdline"] or ()
            ):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def test_failures_are_reported_with_their_log_tail_and_exit_code_1(tmp_path):
    _write_module(
        tmp_path,
        "runner_failing_sweep",
        """
        from surge.runner import Experiment, ParamList, RunDescription
        ok = "python -c 'print(123)'"
        bad = "python -c 'import sys; print(\\"line-before\\"); sys.exit(\\"boom-\\" + sys.argv[1])'"
        RUN_DESCRIPTION = RunDescription("r", [
            Experiment("ok", ok),
            Experiment("bad", bad, ParamList([{"seed": 5}])),
            Experiment("missing", "no_such_program_xyz --flag"),
        ])
        """,
    )
    res = subprocess.run(
        _runner(tmp_path, "runner_failing_sweep", "--max_parallel=2", "--pause_between=0"),
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1, res.stderr
    err = res.stderr
    assert "FAILED 00_bad_see_5 (exit code 1)" in err
    # the tail of its output: what it printed and its error, from its folder's runner_output.txt
    tail = err[err.index("FAILED 00_bad_see_5") :]
    assert "line-before" in tail and "boom---seed=5" in tail
    assert "runner_output.txt" in tail
    # a program that does not exist fails that experiment, not the runner
    assert "FAILED 00_missing (exit code None)" in err and "No such file or directory" in err
    assert "done         " in err  # the other one finished (a command other than surge: exit code 0)
    # the runner's own log, in the sweep's folder, holds the same report
    assert "FAILED 00_bad_see_5 (exit code 1)" in (tmp_path / "td" / "r" / "runner_log.txt").read_text()


def _status(proc: psutil.Process) -> str:
    try:
        return proc.status()
    except psutil.NoSuchProcess:
        return "gone"


def test_experiments_die_with_a_killed_runner(tmp_path):
    # SIGKILL leaves the runner no chance to stop its experiments: the kernel does (PR_SET_PDEATHSIG)
    _write_module(
        tmp_path,
        "runner_sleep_sweep",
        """
        from surge.runner import Experiment, ParamGrid, RunDescription
        cmd = "python -c 'import time; print(\\"sleeping\\", flush=True); time.sleep(120)'"
        RUN_DESCRIPTION = RunDescription("r", [Experiment("s", cmd, ParamGrid([("seed", [0, 1])]))])
        """,
    )
    td = tmp_path / "td"
    runner = subprocess.Popen(
        _runner(tmp_path, "runner_sleep_sweep", "--max_parallel=2", "--pause_between=0"),
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    outputs = [td / "r" / "s" / f"0{i}_s_see_{i}" / "runner_output.txt" for i in range(2)]
    try:
        deadline = time.monotonic() + 60
        # the runner's header line quotes the command, "sleeping" included: wait for the
        # experiments' own line, printed once they run
        while not all(o.exists() and "sleeping" in o.read_text().splitlines() for o in outputs):
            assert time.monotonic() < deadline and runner.poll() is None
            time.sleep(0.05)
        children = psutil.Process(runner.pid).children()
        assert len(children) == 2
    finally:
        runner.kill()
        runner.wait()
    gone, alive = psutil.wait_procs(children, timeout=20)
    assert alive == [], [(p.pid, _status(p)) for p in alive]


@pytest.mark.slow
def test_a_bad_flag_stops_the_sweep_before_anything_starts(tmp_path, monkeypatch, capsys):
    _write_module(
        tmp_path,
        "runner_bad_flag_sweep",
        """
        from surge.runner import Experiment, ParamGrid, RunDescription
        cmd = "python -m surge.train --env=CartPole-v1 --serial_mode=True"
        RUN_DESCRIPTION = RunDescription("r", [Experiment("e", cmd, ParamGrid([("learning_rat", [0.1])]))])
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(_runner(tmp_path, "runner_bad_flag_sweep")[3:]) == 2  # in-process: no interpreter start
    err = capsys.readouterr().err
    assert "--learning_rat" in err and "00_e_l.rat_0.1" in err
    assert not (tmp_path / "td").exists()


def test_experiments_per_gpu_sets_cuda_visible_devices(tmp_path):
    # 3 experiments, 2 GPUs, one experiment per GPU: 00 on GPU 0, 01 on GPU 1, 02 waits for a free one
    _write_module(
        tmp_path,
        "runner_gpu_sweep",
        """
        from surge.runner import Experiment, ParamGrid, RunDescription
        cmd = "python -c 'import os, time; print(\\"gpu=\\" + os.environ[\\"CUDA_VISIBLE_DEVICES\\"]); time.sleep(1)'"
        RUN_DESCRIPTION = RunDescription("r", [Experiment("g", cmd, ParamGrid([("seed", [0, 1, 2])]))])
        """,
    )
    argv = _runner(
        tmp_path, "runner_gpu_sweep", "--num_gpus=2", "--experiments_per_gpu=1", "--max_parallel=4"
    )
    res = subprocess.run(
        argv + ["--pause_between=0"], env=_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    folder = tmp_path / "td" / "r" / "g"
    gpus = [(folder / f"0{i}_g_see_{i}" / "runner_output.txt").read_text().splitlines()[-1] for i in range(3)]
    assert gpus[:2] == ["gpu=0", "gpu=1"] and gpus[2] in ("gpu=0", "gpu=1")
    starts = [line for line in res.stderr.splitlines() if "Starting " in line]
    assert ", GPU 0)" in starts[0] and ", GPU 1)" in starts[1]
    # 02 started only after one of the first two ended (one experiment per GPU)
    lines = res.stderr.splitlines()
    first_end = min(i for i, line in enumerate(lines) if ": done (exit code 0" in line)
    assert lines.index(starts[2]) > first_end


@pytest.mark.slow
def test_sweep_resumes_after_ctrl_c_without_repeating_finished_experiments(tmp_path):
    _write_module(
        tmp_path,
        "runner_cartpole_2x2",
        """
        from surge.runner import Experiment, ParamGrid, RunDescription
        cmd = ("python -m surge.train --env=CartPole-v1 --serial_mode=True --num_workers=1 "
               "--num_torch_threads=1 --train_for_env_steps=10000 --report_interval_sec=0.5")
        grid = ParamGrid([("learning_rate", [0.001, 0.0003]), ("seed", [1, 2])])
        RUN_DESCRIPTION = RunDescription("sweep", [Experiment("cartpole", cmd, grid)])
        """,
    )
    td = tmp_path / "td"
    folders = [
        td / "sweep" / "cartpole" / n
        for n in (
            "00_cartpole_l.rat_0.001_see_1",
            "01_cartpole_l.rat_0.001_see_2",
            "02_cartpole_l.rat_0.0003_see_1",
            "03_cartpole_l.rat_0.0003_see_2",
        )
    ]

    def training(f: Path) -> bool:  # started training (a progress line), not finished
        log = f / "surge_log.txt"
        return log.exists() and "Env frames/s" in log.read_text() and not (f / "done").exists()

    argv = _runner(tmp_path, "runner_cartpole_2x2", "--max_parallel=2", "--pause_between=1")
    runner = subprocess.Popen(
        argv, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        # Ctrl+C once one experiment is done while another is in the middle of its training
        deadline = time.monotonic() + 240
        while not (any((f / "done").exists() for f in folders) and any(training(f) for f in folders)):
            assert runner.poll() is None, runner.communicate()[0]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        runner.send_signal(signal.SIGINT)
        out, _ = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 130, out
    assert _processes_under(td) == []  # no experiment outlives the runner
    finished = [f for f in folders if (f / "done").exists()]
    stopped = [f for f in folders if f not in finished and list(f.glob("checkpoint_p0/checkpoint_*.pth"))]
    assert finished and stopped, out
    assert "interrupted  " in out
    assert not (folders[3] / "cfg.json").exists()  # never started: 2 ran while 0 and 1 did
    done_times = {f: (f / "done").stat().st_mtime_ns for f in finished}

    res = subprocess.run(argv, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for f in folders:
        assert (f / "done").read_text() == "env_frames=10000\n"
    for f in finished:  # not run again
        assert f"skipped      {f}" in res.stderr
        assert (f / "done").stat().st_mtime_ns == done_times[f]
        assert (f / "runner_output.txt").read_text().count("=== surge.runner") == 1
    for f in stopped:  # resumed from its checkpoint, not restarted
        out_f = (f / "runner_output.txt").read_text()
        assert out_f.count("=== surge.runner") == 2 and ": resuming: " in out_f
        resumed = [line for line in out_f.splitlines() if "Resumed from env frame" in line]
        frame = re.search(r"Resumed from env frame (\d+)", resumed[0]) if len(resumed) == 1 else None
        assert frame is not None and int(frame.group(1)) > 0, resumed
    assert _processes_under(td) == []


def test_an_experiment_forked_by_a_runner_that_died_before_its_prctl_stops_itself():
    # the race the parent-death signal leaves open: the runner killed between fork and prctl
    # (simulated by naming a runner pid that is not the child's parent)
    import functools

    from surge.runner.run_processes import _die_with_runner

    not_the_parent = os.getpid() + 1_000_000
    proc = subprocess.Popen(["sleep", "30"], preexec_fn=functools.partial(_die_with_runner, not_the_parent))
    assert proc.wait(timeout=10) == -signal.SIGTERM
    same = subprocess.Popen(["sleep", "0.1"], preexec_fn=functools.partial(_die_with_runner, os.getpid()))
    assert same.wait(timeout=10) == 0
