"""tests/conftest.py keeps in-process training runs of tests from writing reports (except in the
report's own test modules), whichever test imports the training run first: checked on a copy of
the conftest, in a pytest of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_reports_are_off_outside_report_tests_even_when_the_test_imports_the_run(tmp_path):
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    # the first test imports the training run itself (nothing imported it before the fixture ran)
    (tmp_path / "test_a_plain.py").write_text(
        "def test_off():\n"
        "    import surge.app.training_run as t\n"
        "    assert t.finish_report.__name__ == '<lambda>' and t.update_report.__name__ == '<lambda>'\n"
    )
    (tmp_path / "test_report_b.py").write_text(
        "def test_on():\n"
        "    import surge.experiment.report as r\n"
        "    import surge.app.training_run as t\n"
        "    assert t.finish_report is r.finish_report and t.update_report is r.update_report\n"
        "    assert r.finish_report.__name__ == 'finish_report'\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_a_plain.py",
            "test_report_b.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 passed" in out.stdout
