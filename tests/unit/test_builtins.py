"""The registries import none of their plug-ins; `surge.app.builtins` registers every built-in
algorithm and env family, and makes the children of a run import it too (issue 56, item 2)."""

import subprocess
import sys
from pathlib import Path

from surge.runtime import child_start
from surge.runtime.child_start import ChildTask, direct_context

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> str:
    # a fresh interpreter: this test process imported the built-ins already (tests/conftest.py)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_registries_import_no_plug_in_and_the_builtins_register_them_all():
    code = (
        "from surge.envs.registry import _FAMILIES\n"
        "from surge.learning.algorithm import algorithm_names\n"
        "print(sorted(algorithm_names()), sorted(f.prefix for f in _FAMILIES))\n"
        "import surge.app.builtins\n"
        "from surge.runtime.child_start import STARTUP_MODULES\n"
        "print('APPO' in algorithm_names(), 'SAC' in algorithm_names(), len(_FAMILIES) > 5, STARTUP_MODULES)\n"
    )
    before, after = _python(code).splitlines()
    assert before == "[] []"
    assert after == "True True True ['surge.app.builtins']"


def _report_modules(q) -> None:
    q.put(sorted(m for m in ("surge.app.builtins", "surge.algorithms.appo.declaration") if m in sys.modules))


def test_a_spawned_child_imports_the_startup_modules_before_its_role(monkeypatch):
    monkeypatch.setattr(child_start, "STARTUP_MODULES", ["surge.app.builtins"])
    ctx = direct_context()
    q = ctx.Queue()
    p = ctx.Process(target=child_start.child_main, args=(ChildTask(_report_modules, q),))
    p.start()
    try:
        got = q.get(timeout=120)
    finally:
        p.join(timeout=30)
    assert got == ["surge.algorithms.appo.declaration", "surge.app.builtins"]
