"""surge's layers import downwards only: the import-linter contract in pyproject.toml
(`[tool.importlinter]`: errors < cfg < data, models, envs, replay < algorithms, learning < sampling <
runtime < distributed, population, experiment, evaluation < app, the CLI modules and the commands
export, runner, tune) is kept, no modules import each other in a circle (function-level imports
counted), and the checkers these tests rely on do report a broken contract and a circle."""

import subprocess
import sys
from pathlib import Path

import grimp

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


def import_circles(package: str) -> list[list[str]]:
    """The import circles of `package`: each strongly connected component of more than one module
    of its import graph (Tarjan's algorithm), its modules sorted. grimp counts every import a
    module executes, at its top or inside a function; imports under `if TYPE_CHECKING:` are left
    out, as Python never runs them (an annotation's type is no import at run time)."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=True, cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        # iterative depth-first search: (module, its imports not yet visited)
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imported = work[-1]
            child = next(imported, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return sorted(circles)


def test_no_module_imports_itself_through_others():
    # issue 56: a function-level import is no way around a circle; break it by moving the shared
    # piece down, injecting it, or splitting a module
    circles = import_circles("surge")
    assert circles == [], "import circles (modules of each):\n" + "\n".join(
        "  " + " <-> ".join(c) for c in circles
    )


def test_a_circle_is_found_even_through_a_function_level_import(tmp_path, monkeypatch):
    # a checker that cannot fail would keep nothing: a -> b at the top, b -> a inside a function,
    # c -> a alone (no circle); d -> e, and e -> d only under TYPE_CHECKING (no import at run time)
    package = tmp_path / "circle_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circle_pkg import b\n")
    (package / "b.py").write_text("def f():\n    from circle_pkg import a\n\n    return a\n")
    (package / "c.py").write_text("from circle_pkg import a\n")
    (package / "d.py").write_text("from circle_pkg import e\n")
    (package / "e.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from circle_pkg import d\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_circles("circle_pkg") == [["circle_pkg.a", "circle_pkg.b"]]
