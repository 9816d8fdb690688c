"""YAML files of flag values: ours (flat `name: value`) and rl_games' as they ship (translated by
`surge.cfg.rl_games_yaml`), with the flags' own type conversion (`convert_yaml`)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from surge.cfg.cli import str2bool
from surge.cfg.config import EvalParams
from surge.cfg.rl_games_yaml import is_rl_games_yaml, translate
from surge.errors import ConfigError

log = logging.getLogger("surge")


def read_yaml(path: str) -> Any:
    """The parsed YAML file at `path` ({} for an empty file).

    Raises:
        ConfigError: the file is missing, or not UTF-8 YAML.
    """
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except OSError as e:
        raise ConfigError(
            "cfg", f"cannot read {path!r}: {e.strerror}.", "give the path of an existing YAML file."
        ) from e
    except UnicodeDecodeError as e:
        raise ConfigError("cfg", f"{path!r} is not UTF-8 text ({e.reason}).", "give a YAML file.") from e
    except yaml.YAMLError as e:
        raise ConfigError("cfg", f"{path!r} is not valid YAML: {e}", "fix the file's syntax.") from e
    return data


#: rl_games notes already logged by this process (a parse that restarts logs them once)
_LOGGED_NOTES: set[tuple[str, str]] = set()


def load_yaml(path: str, evaluation: bool = False) -> dict[str, Any]:
    """Reads a YAML file of `name: value` pairs (a top-level `params:` mapping is also accepted),
    or an rl_games file as it ships (its nested `params: algo / model / network / config` schema,
    translated by `surge.cfg.rl_games_yaml.translate`; with `evaluation`, its `player` block gives
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
    if isinstance(data, dict) and isinstance(data.get("params"), dict):
        data = data["params"]
    if not isinstance(data, dict):
        raise ConfigError("cfg", f"{path!r} must hold a mapping of parameter names to values.", "")
    for k in data:
        if not isinstance(k, str):
            raise ConfigError(
                "cfg", f"{path!r} has the key {k!r}, which is not a parameter name.", "write name: value."
            )
    return data


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


def yaml_name(values: dict[str, Any], key: str, path: str) -> str | None:
    """The `env` or `algo` of a YAML file, read before the parser exists: a string or absent.

    Raises:
        ConfigError: the value is not a string.
    """
    v = values.get(key)
    if v is None or isinstance(v, str):
        return v
    raise ConfigError(
        key, f"{v!r} in {path} is not a name.", f"write e.g. {key}: cartpole" if key == "env" else ""
    )


def convert_yaml(
    values: dict[str, Any], parser: argparse.ArgumentParser, path: str, defaults: dict[str, Any]
) -> dict[str, Any]:
    """Converts YAML values with the flags' own converters (PyYAML reads `1e-4` as a string): a
    scalar for a flag of one value, a list (or one scalar) for a list flag, null only for a flag
    whose default is None.

    Raises:
        ConfigError: a value the field's type does not accept.
    """
    actions = {a.dest: a for a in parser._actions}
    out = {}
    for k, v in values.items():
        action = actions.get(k)
        if action is None or action.type is None:
            out[k] = v
            continue
        is_list = action.nargs == "*"
        if v is None and defaults.get(k, 0) is None:
            out[k] = None
            continue
        if v is None or isinstance(v, dict) or (isinstance(v, list) and not is_list):
            kind = "null" if v is None else "a mapping" if isinstance(v, dict) else "a list"
            raise ConfigError(
                k,
                f"{kind} in {path} where the flag takes {'a list of values' if is_list else 'one value'}.",
                f"write e.g. {k}: {defaults[k]!r}"
                if k in defaults and not isinstance(defaults[k], list)
                else f"fix the value in {path}.",
            )
        convert: Callable[[Any], Any] = action.type  # type: ignore[assignment]
        items = v if isinstance(v, list) else [v]
        try:
            converted = [convert(x if isinstance(x, bool) and convert is str2bool else str(x)) for x in items]
        except (argparse.ArgumentTypeError, ValueError) as e:
            raise ConfigError(
                k, f"{v!r} in {path} is not a valid value: {e}.", "fix the value in the YAML file."
            ) from e
        out[k] = converted if is_list else converted[0]
        if action.choices is not None and out[k] not in action.choices:
            raise ConfigError(k, f"{v!r} in {path} is not one of {list(action.choices)}.", "")
    return out
