"""The test command and its fast subset (issue 14, defect 15): the README's command runs every
test (CI runs it), and right under it the README documents the fast subset, `-m "not slow"`, whose
marker pytest knows."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_documents_the_fast_subset_right_under_the_full_test_command():
    readme = (ROOT / "README.md").read_text()
    full = readme.index("python -m pytest -q tests\n")
    fast = readme.index('python -m pytest -q -m "not slow" tests')
    assert full < fast
    between = readme[full:fast]
    assert between.count("```bash") == 1, "the fast subset is the next command after the full one"
    assert not re.search(r"python -m pytest[^\n]*-m", readme[:full]), "the full command selects no subset"


def test_the_slow_marker_is_registered():
    text = (ROOT / "pyproject.toml").read_text()  # (tomllib is Python 3.11+; surge supports 3.10)
    markers = re.search(r"^markers = \[(.*)\]$", text, re.M).group(1)
    assert re.search(r'"slow: [^"]*not slow', markers), markers
