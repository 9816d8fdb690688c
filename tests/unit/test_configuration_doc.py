"""docs/configuration.md is generated from the config and says which flags are idle."""

import re
from pathlib import Path

from surge.app.reference import reference
from surge.app.resolve import parse_cfg
from surge.cfg.validate import ASYNC_ONLY, NO_EFFECT

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def _row(doc: str, flag: str) -> str:
    return next(line for line in doc.splitlines() if line.startswith(f"| `--{flag}` |"))


def test_the_doc_is_the_generated_reference():
    assert DOC.read_text() == reference(), "regenerate: python -m surge.app.reference > docs/configuration.md"


def test_the_doc_says_which_flags_have_no_effect():
    doc = reference()
    for flag in NO_EFFECT:
        assert "**No effect in surge**" in _row(doc, flag), flag
    for flag in ASYNC_ONLY:
        assert "**No effect with --serial_mode=True**" in _row(doc, flag), flag


def test_with_pbt_trains_so_the_doc_does_not_call_it_refused(tmp_path):
    cfg = parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", "--with_pbt=True", "--num_policies=2"])
    assert cfg.with_pbt
    assert "**Refused**" not in _row(DOC.read_text(), "with_pbt")


def test_the_algo_help_names_every_built_in_algorithm():
    from surge.learning.algorithm import algorithm_names, get_algorithm

    built_in = [n for n in algorithm_names() if get_algorithm(n).act.__module__.startswith("surge.")]
    assert {"APPO", "DQN", "R2D2", "SAC", "TD3", "DDPG"} <= set(built_in)
    row = _row(DOC.read_text(), "algo")
    for name in built_in:
        assert re.search(rf"\b{name}\b", row), (name, row)
