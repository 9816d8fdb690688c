"""`surge.train` with the async placement from each kind of main module (issue 55, item 6): a
program on standard input (`python - <<EOF`, whose children failed with FileNotFoundError:
'<stdin>') and `python -c` train; a script that calls `train` at its top level, outside
`if __name__ == "__main__":`, gets a `ConfigError` that names the file, the line and the fix before
any process starts (it got multiprocessing's raw "bootstrapping phase" traceback inside
`RunFailed`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """\
from surge import train
run = train(env="CartPole-v1", experiment="e", train_dir={train_dir!r}, train_for_env_steps=300,
            num_workers=1, num_envs_per_worker=2, decorrelate_experience_max_seconds=0,
            set_workers_cpu_affinity=False)
print("status:", run.status)
"""


def _python(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, *args], input=stdin, cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stdin", "-c"])
def test_a_program_without_a_main_file_trains_with_the_async_placement(tmp_path, how):
    program = PROGRAM.format(train_dir=str(tmp_path / "train_dir"))
    if how == "stdin":
        out = _python("-", cwd=tmp_path, stdin=program)
    else:
        out = _python("-c", program, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "status: done" in out.stdout, out.stdout + out.stderr[-3000:]


@pytest.mark.slow
def test_a_script_calling_train_at_its_top_level_gets_a_clear_error_before_any_process_starts(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(PROGRAM.format(train_dir=str(tmp_path / "train_dir")))
    out = _python(str(script), cwd=tmp_path)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("surge.errors.ConfigError: --serial_mode:"), out.stderr[-3000:]
    assert f"{script}, line 2" in last and 'if __name__ == "__main__":' in last and "serial_mode=True" in last
    assert "Started process" not in out.stderr and "bootstrapping" not in out.stderr
