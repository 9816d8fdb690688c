"""Every breakage of `benchmarks/break_learning.py` still applies to the code: for each, one of its
snippets is found under `surge/` exactly as the script finds it (`locate`), and replacing it changes
the code. A refactor that renames a line a breakage targets fails here instead of turning the
breakage silently into "NOT APPLIED"; update the breakage's snippet (add the new spelling as an
alternative) when that happens."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_script():
    name = "break_learning_under_test"
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "break_learning.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve the module's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


bl = _load_script()


def test_breakage_names_are_unique():
    names = [b.name for b in bl.BREAKAGES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("breakage", bl.BREAKAGES, ids=lambda b: b.name)
def test_breakage_still_applies_to_surge(breakage):
    found = bl.locate(ROOT, breakage)
    assert found is not None, (
        f"breakage {breakage.name!r}: none of its snippets occurs under surge/ any more "
        f"({[s for s, _ in breakage.alternatives]}); give it the code's new spelling in "
        "benchmarks/break_learning.py"
    )
    snippet, replacement, hits = found
    assert snippet != replacement
    for text in hits.values():
        assert text.replace(snippet, replacement) != text


def test_a_breakage_whose_snippet_is_gone_is_not_located(tmp_path):
    # the check above is only as good as `locate`: a snippet that matches nothing must give None,
    # and one that matches must be found in a file under surge/ (here a scratch tree)
    (tmp_path / "surge" / "sub").mkdir(parents=True)
    (tmp_path / "surge" / "sub" / "m.py").write_text("x = compute(a, b)\n")
    gone = bl.Breakage("gone", "renamed away", [("x = compute(a, c)", "x = 0")])
    assert bl.locate(tmp_path, gone) is None
    second = bl.Breakage("second", "new spelling", [("x = compute(a, c)", "x = 0"), ("compute(a, b)", "0")])
    snippet, _, hits = bl.locate(tmp_path, second)
    assert snippet == "compute(a, b)" and list(hits) == [tmp_path / "surge" / "sub" / "m.py"]
    # and the script reports such a breakage as not applied, changing nothing
    originals, what = bl.apply(tmp_path, gone)
    assert originals == {} and what.startswith("NOT APPLIED")
