"""The table at the end of docs/rl_games.md is what `benchmarks/rl_games_configs.py` makes on this
build (its `--check` mode, which CI runs through this test), and the check notices a stale table."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import shutil
from pathlib import Path

from rl_games_yaml_support import CONFIGS

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "rl_games.md"


def _script():
    spec = importlib.util.spec_from_file_location(
        "rl_games_configs", ROOT / "benchmarks" / "rl_games_configs.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(script, argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = script.main(argv)
    return rc, out.getvalue()


def test_the_docs_table_is_this_builds():
    rc, diff = _run(_script(), ["--check", str(DOC)])
    assert rc == 0, (
        f"docs/rl_games.md is stale; run python benchmarks/rl_games_configs.py --write docs/rl_games.md\n{diff}"
    )


def test_a_stale_table_fails_the_check_and_write_mends_it(tmp_path):
    script = _script()
    configs = tmp_path / "configs"
    configs.mkdir()
    for name in ("ppo_cartpole.yaml", "ppo_smac.yaml"):  # one that translates, one refused
        shutil.copy(CONFIGS / name, configs / name)
    doc = tmp_path / "page.md"
    doc.write_text(
        "# page\n\ntext\n\n2 files: 2 translates.\n\n| file | result | surge env / refused key | why |\n"
    )
    argv = ["--configs", str(configs)]
    rc, diff = _run(script, [*argv, "--check", str(doc)])
    assert rc == 1 and "+2 files: 1 translates, 1 refused." in diff
    assert _run(script, [*argv, "--write", str(doc)])[0] == 0
    text = doc.read_text()
    assert text.startswith("# page\n\ntext\n\n2 files: 1 translates, 1 refused.\n")
    assert "| ppo_cartpole.yaml | translates | `CartPole-v1` |  |" in text
    assert _run(script, [*argv, "--check", str(doc)])[0] == 0
