"""docs/configuration.md is generated from the config and says which flags are refused or idle."""

from pathlib import Path

import pytest

from surge.cfg.cli import parse_cfg
from surge.cfg.reference import REFUSED, reference
from surge.cfg.validate import ASYNC_ONLY, NO_EFFECT

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def _row(doc: str, flag: str) -> str:
    return next(line for line in doc.splitlines() if line.startswith(f"| `--{flag}` |"))


def test_the_doc_is_the_generated_reference():
    assert DOC.read_text() == reference(), "regenerate: python -m surge.cfg.reference > docs/configuration.md"


def test_the_doc_says_which_flags_are_refused_or_have_no_effect():
    doc = reference()
    for flag in REFUSED:
        assert "**Refused**" in _row(doc, flag), flag
    for flag in NO_EFFECT:
        assert "**No effect in surge**" in _row(doc, flag), flag
    for flag in ASYNC_ONLY:
        assert "**No effect with --serial_mode=True**" in _row(doc, flag), flag


@pytest.mark.parametrize("flag", sorted(REFUSED))
def test_flags_the_doc_calls_refused_are_refused(flag, tmp_path):
    value, _ = REFUSED[flag]
    with pytest.raises(Exception) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", f"--{flag}={value}"])
    assert f"--{flag}" in str(e.value)
