"""Where the docs promise that a serial run continues exactly where it stopped, they say that the
replay algorithms do so only with `--save_replay_buffer=True` (issue 55, item 5): without it their
replay starts empty on resume (`tests/integration/test_replay_resume_interrupted.py` shows both)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _claims(text: str) -> list[str]:
    """Each paragraph (or comment block) that says a run continues exactly where it stopped."""
    blocks = re.split(r"\n\s*\n", text)
    return [b for b in blocks if re.search(r"continue[s]?\s+exactly\s+where", b)]


def test_every_exact_resume_claim_names_the_replay_caveat():
    found = 0
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for claim in _claims(path.read_text()):
            found += 1
            assert "--save_replay_buffer" in claim, f"{path.name}: {claim[:300]}"
    assert found, "the README promises exact serial resume; this test follows that promise"
