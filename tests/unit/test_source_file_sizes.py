"""Issue 56: files of one concept each, "no source file in surge/ over 500 lines"."""

from pathlib import Path

import surge

MAX_LINES = 500


def test_no_source_file_of_surge_is_over_500_lines() -> None:
    root = Path(surge.__file__).parent
    sizes = {p.relative_to(root.parent): len(p.read_text().splitlines()) for p in root.rglob("*.py")}
    assert len(sizes) > 100  # the package was found, not an empty folder
    too_long = {str(p): n for p, n in sizes.items() if n > MAX_LINES}
    assert not too_long, f"split these by concept (at most {MAX_LINES} lines each): {too_long}"
