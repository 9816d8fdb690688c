"""The Slurm runner against fake `sbatch`/`squeue`/`scancel`/`scontrol` scripts on PATH (no Slurm):
job names tell sweeps apart by their folder and squeue is limited to the user; Ctrl+C while
submitting cancels what was submitted; a signal while the controller is unreachable returns at once;
`--slurm_timeout` fills the template's `$TIMEOUT`; a benchmark job that exits 0 is done."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from surge.runner.run import main

REPO = Path(__file__).resolve().parents[2]

# the fake Slurm keeps its queue in $FAKE_SLURM/queue (lines `id|name|state`) and logs each call
_FAKES = {
    "sbatch": r"""
        echo "$*" >> "$FAKE_SLURM/sbatch.log"
        n=$(wc -l < "$FAKE_SLURM/sbatch.log")
        jid=$((1000 + n))
        name=$(printf '%s\n' "$@" | sed -n 's/^--job-name=//p')
        [ -e "$FAKE_SLURM/jobs_end_at_once" ] || echo "$jid|$name|RUNNING" >> "$FAKE_SLURM/queue"
        [ -e "$FAKE_SLURM/signal_on_sbatch" ] && kill -INT $PPID
        [ -e "$FAKE_SLURM/controller_goes_away" ] && touch "$FAKE_SLURM/down"
        echo "$jid"
    """,
    "squeue": r"""
        echo "$*" >> "$FAKE_SLURM/squeue.log"
        if [ -e "$FAKE_SLURM/down" ]; then
            kill -TERM $PPID
            echo "squeue: error: Unable to contact slurm controller" >&2
            exit 1
        fi
        [ -e "$FAKE_SLURM/queue" ] && cat "$FAKE_SLURM/queue"
        exit 0
    """,
    "scancel": r"""
        echo "$*" >> "$FAKE_SLURM/scancel.log"
        for a in "$@"; do
            case "$a" in -*) ;; *) sed -i "/^$a|/d" "$FAKE_SLURM/queue" ;; esac
        done
    """,
    "scontrol": r"""
        [ -e "$FAKE_SLURM/down" ] && exit 1
        echo "JobId=$3 JobState=COMPLETED ExitCode=$(cat "$FAKE_SLURM/exit_code" 2>/dev/null || echo 0:0)"
    """,
}


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch) -> Path:
    state = tmp_path / "fake_slurm"
    bin_dir = state / "bin"
    bin_dir.mkdir(parents=True)
    for cmd, body in _FAKES.items():
        (bin_dir / cmd).write_text("#!/bin/sh\n" + textwrap.dedent(body))
        (bin_dir / cmd).chmod(0o755)
    monkeypatch.setenv("FAKE_SLURM", str(state))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return state


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return name


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_queued_job_counts_only_for_the_same_folder_and_user(tmp_path, monkeypatch, fake_slurm):
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_fake_one",
        """
        from surge.runner import Experiment, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [Experiment("e", "echo hi")])
        """,
    )
    # a job of the same run and experiment name, from a sweep in another --train_dir (the old
    # job names, `surge:<run>/<experiment>`, matched it)
    (fake_slurm / "queue").write_text("77|surge:r/00_e|RUNNING\n")
    argv = [f"--run={mod}", "--runner=slurm", "--slurm_wait=False", "--pause_between=0"]
    assert main(argv + [f"--train_dir={tmp_path / 'td'}"]) == 0
    submitted = _lines(fake_slurm / "sbatch.log")
    assert len(submitted) == 1, "the job of another sweep's folder was taken for this one"
    name = re.search(r"--job-name=(\S+)", submitted[0]).group(1)
    assert re.fullmatch(r"surge:r/00_e:[0-9a-f]{8}", name)
    assert all("--me" in line.split() for line in _lines(fake_slurm / "squeue.log"))
    # its own job is still queued: not submitted again
    assert main(argv + [f"--train_dir={tmp_path / 'td'}"]) == 0
    assert len(_lines(fake_slurm / "sbatch.log")) == 1
    # another suffix is another folder: submitted
    assert main(argv + [f"--train_dir={tmp_path / 'td'}", "--experiment_suffix=x"]) == 0
    assert len(_lines(fake_slurm / "sbatch.log")) == 2


def _runner(tmp_path: Path, module: str, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    return subprocess.run(
        [sys.executable, "-m", "surge.runner.run", f"--run={module}", "--runner=slurm", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_ctrl_c_while_submitting_stops_and_cancels_the_submitted_jobs(tmp_path, monkeypatch, fake_slurm):
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_fake_three",
        """
        from surge.runner import Experiment, ParamGrid, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [Experiment("e", "echo hi", ParamGrid([("x", [1, 2, 3])]))])
        """,
    )
    (fake_slurm / "signal_on_sbatch").touch()  # Ctrl+C reaches the runner during the first sbatch
    (fake_slurm / "exit_code").write_text("130:0")
    res = _runner(tmp_path, mod, f"--train_dir={tmp_path / 'td'}", "--pause_between=0")
    assert res.returncode == 130, res.stderr
    assert len(_lines(fake_slurm / "sbatch.log")) == 1, "submitting went on after Ctrl+C"
    assert "--full --signal=INT 1001" in _lines(fake_slurm / "scancel.log")
    assert (tmp_path / "td" / "r" / "slurm" / "scancel.sh").read_text().split() == ["scancel", "1001"]
    assert "not_started" in res.stderr and "interrupted" in res.stderr


def test_a_signal_while_the_controller_is_unreachable_returns_at_once(tmp_path, monkeypatch, fake_slurm):
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_fake_down",
        """
        from surge.runner import Experiment, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [Experiment("e", "echo hi")])
        """,
    )
    # after the submission squeue fails, and SIGTERM reaches the runner meanwhile
    (fake_slurm / "controller_goes_away").touch()
    res = _runner(tmp_path, mod, f"--train_dir={tmp_path / 'td'}", "--pause_between=0")
    assert res.returncode == 130, res.stderr
    assert "left as they are" in res.stderr and "1 interrupted" in res.stderr
    assert len(_lines(fake_slurm / "squeue.log")) == 2  # the start, then the one that failed: no retry
    assert not (fake_slurm / "scancel.log").exists()


def test_slurm_timeout_fills_the_templates_timeout(tmp_path, monkeypatch, capsys):
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_fake_timeout",
        """
        from surge.runner import Experiment, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [Experiment("e", "echo hi")])
        """,
    )
    # Sample Factory's sbatch_timeout.sh
    template = tmp_path / "sbatch_timeout.sh"
    template.write_text(
        "#!/bin/bash\ntimeout $TIMEOUT $CMD\nif [[ $$? -eq 124 ]]; then\n"
        "    sbatch $PARTITION--gres=gpu:$GPU -c $CPU --parsable --output $FILENAME-slurm-%j.out $FILENAME\nfi\n"
    )
    argv = [
        f"--run={mod}",
        "--runner=slurm",
        f"--train_dir={tmp_path / 'td'}",
        f"--slurm_workdir={tmp_path / 'w'}",
        "--slurm_print_only=True",
    ]
    assert main(argv + [f"--slurm_sbatch_template={template}", "--slurm_timeout=23h"]) == 0
    lines = (tmp_path / "w" / "sbatch_00_e.sh").read_text().splitlines()
    assert lines[1] == "timeout 23h echo hi --experiment=00_e " + f"--train_dir={tmp_path / 'td' / 'r' / 'e'}"
    assert lines[2] == "if [[ $? -eq 124 ]]; then"
    capsys.readouterr()
    # a timeout the (default) template does not use is refused
    assert main(argv + ["--slurm_timeout=1h"]) == 2
    assert "--slurm_timeout" in capsys.readouterr().err


def test_a_benchmark_job_that_exits_0_is_done_and_skipped_next_time(tmp_path, monkeypatch, fake_slurm):
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_fake_bench",
        """
        from surge.runner import Experiment, RunDescription
        _cmd = "python -m surge.train --env=CartPole-v1 --algo=DUMMY_SAMPLER --sample_env_frames=1000"
        RUN_DESCRIPTION = RunDescription("r", [Experiment("bench", _cmd)])
        """,
    )
    (fake_slurm / "jobs_end_at_once").touch()  # the job ends before the first squeue; scontrol: exit 0
    argv = [f"--run={mod}", "--runner=slurm", f"--train_dir={tmp_path / 'td'}", "--pause_between=0"]
    assert main(argv) == 0  # surge writes no `done` for a benchmark: this was "failed"
    folder = tmp_path / "td" / "r" / "bench" / "00_bench"
    assert (folder / "runner_done").exists() and not (folder / "done").exists()
    assert main(argv) == 0
    assert len(_lines(fake_slurm / "sbatch.log")) == 1, "the finished benchmark was submitted again"


def test_a_job_killed_by_a_signal_is_not_done(tmp_path, monkeypatch, fake_slurm):
    # Slurm writes a job killed by a signal as ExitCode=0:<signal>
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_fake_killed",
        """
        from surge.runner import Experiment, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [Experiment("e", "echo hi")])
        """,
    )
    (fake_slurm / "jobs_end_at_once").touch()
    (fake_slurm / "exit_code").write_text("0:9")
    argv = [f"--run={mod}", "--runner=slurm", f"--train_dir={tmp_path / 'td'}", "--pause_between=0"]
    assert main(argv) == 1  # failed, not done
    (fake_slurm / "exit_code").write_text("0:0")
    assert main(argv) == 0
