"""The whole package `surge` (`[tool.mypy]` in pyproject.toml) type-checks clean with mypy, its public
API (surge.api, surge.train, surge.enjoy, surge.export, surge.app, surge.learning.algorithm,
surge.envs.registry, surge.cfg.config, surge.data.batch: the override there) with every def typed."""

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
