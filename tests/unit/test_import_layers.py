"""surge's layers import downwards only: the import-linter contract in pyproject.toml
(`[tool.importlinter]`: errors < cfg < data, models, envs, replay < algorithms, learning < sampling <
runtime < distributed, population, experiment, evaluation < app, the CLI modules and the commands
export, runner, tune) is kept, and the checker this test relies on does report a broken contract."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lint_imports(config: Path) -> subprocess.CompletedProcess[str]:
    # a child process: import-linter builds its graph from the `surge` found on sys.path, which in
    # the child is this checkout's (cwd=ROOT), whatever the test process imported first
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))",
            str(config),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_layer_contract_is_kept():
    out = _lint_imports(ROOT / "pyproject.toml")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 1 kept, 0 broken." in out.stdout, out.stdout


def test_an_upward_import_breaks_a_contract(tmp_path):
    # surge.cfg imports surge.errors; with errors put above cfg that import goes upwards and the
    # checker must say so (a contract test that cannot fail would keep nothing)
    config = tmp_path / "upside_down.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "surge"\n\n'
        '[[tool.importlinter.contracts]]\nname = "errors above cfg"\ntype = "layers"\n'
        'layers = ["surge.errors", "surge.cfg"]\n'
    )
    out = _lint_imports(config)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "surge.cfg is not allowed to import surge.errors" in out.stdout, out.stdout
