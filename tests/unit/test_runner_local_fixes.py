"""The processes runner and the run module: a benchmark experiment (no `done` marker) that exits 0
is done and skipped next time; SIGHUP stops the sweep like Ctrl+C; a ParamGrid given a dict; a run
module that raises while imported exits 2 (no training runs here: `surge` is a fake script)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from surge.runner import ParamGrid
from surge.runner.run import main

REPO = Path(__file__).resolve().parents[2]


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return name


def test_a_benchmark_that_exits_0_is_done_and_skipped_next_time(tmp_path, monkeypatch, capsys):
    # a fake `surge` that exits 0 and writes no `done`, as `surge train --no_writes=True` does
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "surge").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/surge_calls.log\nexit 0\n')
    (bin_dir / "surge").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_local_bench",
        """
        from surge.runner import Experiment, ParamList, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [
            Experiment("dummy", "surge train --env=CartPole-v1 --algo=DUMMY_SAMPLER"),
            Experiment("bench", "surge train --env=CartPole-v1 --no_writes=True"),
        ])
        """,
    )
    argv = [f"--run={mod}", f"--train_dir={tmp_path / 'td'}", "--pause_between=0"]
    assert main(argv) == 0  # it was 130 (each "interrupted"), and the next invocation ran them again
    for folder in ("dummy/00_dummy", "bench/00_bench"):
        assert (tmp_path / "td" / "r" / folder / "runner_done").exists()
    assert main(argv) == 0
    assert len((tmp_path / "surge_calls.log").read_text().splitlines()) == 2, "a finished benchmark ran again"


@pytest.mark.parametrize("code", [0, 130, 143])
def test_a_training_run_stopped_by_a_signal_without_done_is_interrupted(tmp_path, monkeypatch, code):
    # the other side: surge exits 128 + the signal (130 Ctrl+C, 143 SIGTERM; 0 before issue 55)
    # when a signal stopped it; without `done` it is not finished, and not failed either
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "surge").write_text(f"#!/bin/sh\nexit {code}\n")
    (bin_dir / "surge").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_local_train",
        """
        from surge.runner import Experiment, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [Experiment("t", "surge train --env=CartPole-v1")])
        """,
    )
    assert main([f"--run={mod}", f"--train_dir={tmp_path / 'td'}", "--pause_between=0"]) == 130
    assert not (tmp_path / "td" / "r" / "t" / "00_t" / "runner_done").exists()


def test_sighup_stops_the_sweep_like_ctrl_c(tmp_path):
    (tmp_path / "runner_mod_local_sleep.py").write_text(
        "from surge.runner import Experiment, RunDescription\n"
        # the runner appends --experiment=... --train_dir=...: sh takes them as $0 $1
        'RUN_DESCRIPTION = RunDescription("r", [Experiment("s", "sh -c \'sleep 60\'")])\n'
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    runner = subprocess.Popen(
        [sys.executable, "-m", "surge.runner.run", "--run=runner_mod_local_sleep", f"--train_dir={tmp_path}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        children: list[psutil.Process] = []
        while not children and time.monotonic() < deadline:
            children = psutil.Process(runner.pid).children()
            time.sleep(0.05)
        assert children, "the experiment did not start"
        runner.send_signal(signal.SIGHUP)  # the runner's terminal closed
        assert runner.wait(timeout=20) == 130  # was -1 (killed by SIGHUP)
        gone, alive = psutil.wait_procs(children, timeout=5)
        assert not alive
        log = (tmp_path / "r" / "runner_log.txt").read_text()
        assert "interrupted" in log
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def test_param_grid_accepts_a_dict_as_sample_factory_does():
    grid = ParamGrid({"learning_rate": [1e-3, 3e-4], "seed": [1, 2]})
    assert list(grid.generate_params(randomize=False)) == [
        {"learning_rate": 1e-3, "seed": 1},
        {"learning_rate": 1e-3, "seed": 2},
        {"learning_rate": 3e-4, "seed": 1},
        {"learning_rate": 3e-4, "seed": 2},
    ]


def test_a_run_module_that_raises_exits_2_with_its_error(tmp_path, monkeypatch, capsys):
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_local_raises",
        """
        from surge.runner import Experiment, ParamGrid, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [Experiment("e", "echo", ParamGrid([("seed", [])]))])
        """,
    )
    assert main([f"--run={mod}", f"--train_dir={tmp_path / 'td'}"]) == 2
    err = capsys.readouterr().err
    assert "--run" in err and "ValueError" in err and "'seed' has no values" in err
