"""YAML files of flag values: reading one, ours (flat `name: value`, `flat_values`), and the flags'
own type conversion (`convert_yaml`). rl_games' files as they ship are translated in the app layer
(`surge.app.cfg_file`, `surge.app.rl_games`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from surge.cfg.cli import str2bool
from surge.errors import ConfigError


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


def flat_values(data: Any, path: str) -> dict[str, Any]:
    """The `name: value` pairs of one of our YAML files, parsed (`read_yaml`); a top-level `params:`
    mapping is also accepted. rl_games' nested files are translated in the app layer
    (`surge.app.cfg_file.load_yaml`).

    Raises:
        ConfigError: not a mapping, or a key that is not a name.
    """
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
