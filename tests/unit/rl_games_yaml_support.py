"""Shared helpers of the rl_games YAML tests: the files rl_games' wheel ships, read and translated
with this build's flags."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from surge.app.rl_games.translation import Translation, surge_fields, translate
from surge.cfg.yaml_files import read_yaml

rl_games = pytest.importorskip("rl_games")
CONFIGS = Path(rl_games.__file__).parent / "configs"


def future_fields(evaluation: bool = False) -> dict[str, dataclasses.Field]:
    """The flags of this build (every flag issue 21 agreed on is merged)."""
    return surge_fields(evaluation)


def load(name: str) -> Any:
    return read_yaml(str(CONFIGS / name))


def translate_future(name: str, evaluation: bool = False) -> Translation:
    """The translation of a shipped file with this build's flags."""
    return translate(load(name), name, evaluation, fields=future_fields(evaluation), separate_ok=True)
