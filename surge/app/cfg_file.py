"""The `--cfg` file of a run: ours (flat `name: value`, `surge.cfg.yaml_files`) or rl_games' as it
ships (translated by `surge.app.rl_games.translation`, which reads the env families' names and builds
a model to count parameters, so it lives in the app layer, above them)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from surge.app.rl_games.translation import is_rl_games_yaml, translate
from surge.cfg.config import EvalParams
from surge.cfg.yaml_files import flat_values, read_yaml

log = logging.getLogger("surge")


#: rl_games notes already logged by this process (a parse that restarts logs them once)
_LOGGED_NOTES: set[tuple[str, str]] = set()


def load_yaml(path: str, evaluation: bool = False) -> dict[str, Any]:
    """Reads a YAML file of `name: value` pairs (a top-level `params:` mapping is also accepted),
    or an rl_games file as it ships (its nested `params: algo / model / network / config` schema,
    translated by `surge.app.rl_games.translation.translate`; with `evaluation`, its `player` block gives
    enjoy's flags). What the rl_games file sets that has no effect, or only an approximate one, is
    logged once as a warning: by a training run in its log file (`surge.app.notes.config_notes`),
    by `surge enjoy` here (the `player` block's only).

    Raises:
        ConfigError: the file is missing, not UTF-8 YAML, not a mapping, or has a key that is not
            a name; an rl_games key surge cannot honour (named by its full path).
    """
    data = read_yaml(path)
    if is_rl_games_yaml(data):
        out = translate(data, path, evaluation)
        if evaluation:  # a training run logs them in its log file (`surge.app.notes.config_notes`)
            for n in out.notes:
                if n.startswith("params.config.player") and (path, n) not in _LOGGED_NOTES:
                    _LOGGED_NOTES.add((path, n))
                    log.warning("rl_games file %s: %s", path, n)
        return out.values
    return flat_values(data, path)


def player_values(path: str) -> dict[str, Any]:
    """`surge enjoy`'s flags from the `player` block of the rl_games file at `path` (the `--cfg`
    a run was trained with); {} when the file is gone or is not an rl_games file.

    Raises:
        ConfigError: the file no longer translates (a key this surge refuses).
    """
    if not Path(path).is_file():
        log.warning("The run was trained with --cfg %s, which is gone: its player block is not read.", path)
        return {}
    data = read_yaml(path)
    if not is_rl_games_yaml(data):
        return {}
    enjoy = {f.name for f in dataclasses.fields(EvalParams)}
    return {k: v for k, v in translate(data, path, evaluation=True).values.items() if k in enjoy}
