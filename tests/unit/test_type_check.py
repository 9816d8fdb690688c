"""The engine's packages (surge/cfg, surge/runtime, surge/learning, surge/population, surge/replay, surge/algorithms,
surge/export, surge/envs, surge/models, surge/data, surge/experiment, surge/enjoy.py, surge/cli.py and others:
`[tool.mypy]` in pyproject.toml) type-check clean with mypy."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_mypy_reports_no_error_in_the_engine():
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
