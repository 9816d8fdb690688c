"""The test command and its fast subset (issue 14, defect 15): the README's command runs every
test (CI runs it), and right under it the README documents the fast subset, `-m "not slow"`, whose
marker pytest knows."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FULL = "python -m pytest -q -n 2 --dist loadscope tests"  # the README's test command
FAST = 'python -m pytest -q -n 2 --dist loadscope -m "not slow" tests'  # and its fast subset


def test_ci_runs_exactly_the_readmes_install_and_test_command():
    readme = (ROOT / "README.md").read_text()
    line = next(x for x in readme.splitlines() if x.endswith(FULL))
    assert line.startswith("pip install "), line
    ci = [x.strip() for x in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert line in ci, f".ci/run does not run the README's command {line!r}"


def test_readme_documents_the_fast_subset_right_under_the_full_test_command():
    readme = (ROOT / "README.md").read_text()
    full = readme.index(FULL + "\n")
    fast = readme.index(FAST)
    assert full < fast
    between = readme[full:fast]
    assert between.count("```bash") == 1, "the fast subset is the next command after the full one"
    assert not re.search(r"python -m pytest[^\n]*-m", readme[:full]), "the full command selects no subset"


def test_the_slow_marker_is_registered():
    text = (ROOT / "pyproject.toml").read_text()  # (tomllib is Python 3.11+; surge supports 3.10)
    markers = re.search(r"^markers = \[(.*)\]$", text, re.M).group(1)
    assert re.search(r'"slow: [^"]*not slow', markers), markers


def test_readme_gives_the_fast_subsets_expected_time_within_three_minutes():
    """Issue 24 item 11: a developer runs the fast subset often, so the README says how long it
    takes, and that is under the 3 minutes it is meant to stay within."""
    readme = (ROOT / "README.md").read_text()
    full = readme.index(FULL + "\n")
    fast = readme.index(FAST)
    m = re.search(r"takes\s+about\s+(\d+(?:\.\d+)?)\s+(second|minute)s?", readme[full:fast])
    assert m, "the paragraph introducing the fast subset gives its expected time"
    seconds = float(m.group(1)) * (60 if m.group(2) == "minute" else 1)
    assert seconds <= 180


def test_the_slow_marker_says_what_belongs_in_it():
    text = (ROOT / "pyproject.toml").read_text()
    markers = re.search(r"^markers = \[(.*)\]$", text, re.M).group(1)
    assert re.search(r"over ~\d+ s on an idle", markers), markers


def _extras(pyproject: str) -> dict[str, list[str]]:
    """pyproject's optional dependencies, extra -> requirement strings (tomllib is Python 3.11+)."""
    section = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return {
        m.group(1): re.findall(r'"([^"]+)"', m.group(2))
        for m in re.finditer(r"^([\w-]+) = \[(.*)\]", section, re.M)
    }


def _installed_by(extras: list[str], table: dict[str, list[str]]) -> set[str]:
    """Distribution names that `pip install -e ".[extras]"` brings, through `surge-rl[...]`."""
    names: set[str] = set()
    for extra in extras:
        for req in table[extra]:
            inner = re.fullmatch(r"surge-rl\[(.*)\]", req)
            if inner:
                names |= _installed_by(inner.group(1).split(","), table)
            else:
                names.add(re.split(r"[\[<>=!~ ]", req, maxsplit=1)[0].lower())
    return names


def test_every_readme_test_command_comes_with_an_install_that_provides_pytest():
    """Issue 55 item 9: the quick command, run after the README's set-up (whose extras hold no
    pytest), failed with "No module named pytest". Each README block that runs pytest installs, in
    the same block, extras that bring pytest and pytest-xdist (`-n 2`)."""
    readme = (ROOT / "README.md").read_text()
    table = _extras((ROOT / "pyproject.toml").read_text())
    blocks = re.findall(r"^```bash\n(.*?)^```", readme, re.M | re.S)
    runs_pytest = [b for b in blocks if "python -m pytest" in b]
    assert len(runs_pytest) >= 2, "the full command and the fast subset"
    for block in runs_pytest:
        m = re.search(r'pip install [^\n]*-e "\.\[([\w,-]+)\]"', block)
        assert m, f'no `pip install -e ".[...]"` in the block {block!r}'
        missing = {"pytest", "pytest-xdist"} - _installed_by(m.group(1).split(","), table)
        assert not missing, f"{block!r} installs no {sorted(missing)}"
