"""The command line, derived from the config dataclasses, with Sample Factory's flag spelling: one
`--flag` per field (`flag_fields`, `build_parser`), the defaults of an env family and an algorithm
(`field_defaults`), YAML files (ours and rl_games', `surge.cfg.yaml_files`), cfg.json (`save_cfg`,
`rebuild_cfg`). A run's config is resolved from these by `surge.app.resolve.parse_cfg`, which says
which source wins.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import logging
from pathlib import Path
from typing import Any

from surge._version import __version__
from surge.cfg.config import SECTIONS, Config
from surge.errors import ConfigError

log = logging.getLogger("surge")

#: fields that belong to one command, not to the experiment: never written to cfg.json, and ignored
#: when an older cfg.json holds them (a saved `restart_behavior=restart` would wipe every rerun)
COMMAND_ONLY = ("restart_behavior",)
#: the attribute of a parsed `Config` that holds its resume notes (`resume_notes`), not a flag
RESUME_NOTES_ATTR = "_resume_notes"
#: the attribute of a parsed `Config` that holds the defaults other flags chose (`default_notes`)
DEFAULT_NOTES_ATTR = "_default_notes"
#: the attribute of a parsed `Config` that holds the names YAML and the command line gave (a value
#: given is not reported as chosen by the env's spaces: `surge.cfg.space_defaults.describe`)
GIVEN_ATTR = "_given_fields"
#: the attribute of a parsed `Config` that holds the defaults its parse used (`field_defaults` with
#: the spaces' choices), against which `surge.app.notes.config_notes` tells a flag set from one left out
FIELD_DEFAULTS_ATTR = "_field_defaults"


def str2bool(v: str) -> bool:
    """Parses Sample Factory's booleans: True/False, true/false, 1/0, yes/no."""
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "y", "t"):
        return True
    if s in ("false", "0", "no", "n", "f"):
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {v!r}")


def int_flag(v: str) -> int:
    """Integers, also written as 1e9 or 4_000_000."""
    try:
        f = float(str(v).replace("_", ""))
    except ValueError:  # argparse would say "invalid int_flag value"
        raise argparse.ArgumentTypeError(f"expected an integer, got {v!r}") from None
    if not f.is_integer():
        raise argparse.ArgumentTypeError(f"expected an integer, got {v!r}")
    return int(f)


def _optional_int(v: str) -> int | None:
    return None if str(v).lower() in ("none", "null", "") else int_flag(v)


def _optional_float(v: str) -> float | None:
    return None if str(v).lower() in ("none", "null", "") else float(v)


def _optional_str(v: str) -> str | None:
    return None if str(v).lower() in ("none", "null", "") else str(v)


def flag_converter(f: dataclasses.Field, default: Any):
    if isinstance(default, bool):
        return str2bool
    if isinstance(default, int):
        return int_flag
    if isinstance(default, float):
        return float
    if default is None:
        if "str" in str(f.type):
            return _optional_str
        return _optional_float if "float" in str(f.type) else _optional_int
    return str


class FlagParser(argparse.ArgumentParser):
    def error(self, message: str):  # raise instead of exiting, so callers get a ConfigError
        field = ""
        if message.startswith("argument --"):
            named, _, rest = message.partition(": ")
            field = named.split()[1].lstrip("-").split("/")[0]
            message = rest or message  # ConfigError names the flag once, as --FIELD:
        if not message.endswith("."):
            message += "."
        raise ConfigError(field or "command line", message, "see `surge train --env=ENV --help`.")


def config_sections() -> dict[str, str]:
    """Field name -> its section of `Config` ("experiment", "sampling", ...; `SECTIONS`)."""
    return {f.name: title for title, cls in SECTIONS for f in dataclasses.fields(cls)}


def check_known(values: Any, known: set[str], source: str) -> None:
    """Refuses the names in `values` (a dict's keys, or any iterable of names) that are not in
    `known`, naming every one of them (not just the first) with its close matches.

    Raises:
        ConfigError: some names are unknown; `field` is the first of them.
    """
    bad = list(dict.fromkeys(k for k in values if k not in known))
    if not bad:
        return
    hints = []
    for k in bad:
        close = difflib.get_close_matches(k, known, n=2)
        hints.append((k, f"did you mean --{' or --'.join(close)}?" if close else ""))
    if len(bad) == 1:
        raise ConfigError(bad[0], f"unknown parameter in {source}.", hints[0][1] or "remove it (see --help).")
    # one message for all of them, so that a user fixes them in one go instead of one per run
    fixes = [f"for --{k} {h}" for k, h in hints if h]
    unmatched = [f"--{k}" for k, h in hints if not h]
    if unmatched:
        fixes.append(f"remove {', '.join(unmatched)} (see --help).")
    raise ConfigError(
        bad[0],
        f"{len(bad)} unknown parameters in {source}: {', '.join('--' + k for k in bad)}.",
        " ".join(fixes),
    )


def refuse_unknown_args(unknown: list[str], known: set[str], source: str = "the command line") -> None:
    """Refuses what argparse left over (`parse_known_args`): every unknown `--flag` is named with
    its close matches; a stray value (or a bare `--`) is named when no unknown flag explains it.

    Raises:
        ConfigError: `unknown` is not empty.
    """
    if not unknown:
        return
    flags = [t.split("=")[0][2:] for t in unknown if t.startswith("--") and t.split("=")[0][2:]]
    check_known(flags, known, source)
    flag = unknown[0].split("=")[0].lstrip("-")
    raise ConfigError(
        flag if flag in known else "command line",
        f"unexpected argument {unknown[0]!r}.",
        "flags take the form --name=value (a list flag: --name v1 v2).",
    )


def version_text() -> str:
    """`surge <version>`, what `--version` prints."""
    return f"surge {__version__}"


def experiment_path(train_dir: str, experiment: str) -> Path:
    """`train_dir/experiment`."""
    return Path(train_dir) / experiment


def save_cfg(cfg: Config, path: Path) -> None:
    """Writes the resolved config as JSON (the file resume reads), without the `COMMAND_ONLY`
    fields: what to do with an existing folder is decided by each command, never by a saved file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    values = {k: v for k, v in cfg.to_dict().items() if k not in COMMAND_ONLY}
    tmp.write_text(json.dumps(values, indent=2))
    tmp.replace(path)


def acting_in_workers_splits(values: dict[str, Any], given: set[str]) -> list[str]:
    """With `--policy_workers_per_policy=0` (async placement) and `--worker_num_splits` neither
    given nor saved, sets it to 1 in `values` and returns the log line that says so ([] otherwise).

    Why: splits exist so that a worker steps one split's envs while an inference process acts on
    the other's (Sample Factory's double-buffered sampling). A worker that acts itself has nothing
    to overlap, and each split costs its own per-step work (the step's buffer writes, the hand-over),
    so one split of all its envs is cheaper per env frame."""
    if (
        values.get("policy_workers_per_policy") != 0
        or values.get("serial_mode")
        or "worker_num_splits" in given
        or values.get("worker_num_splits", 1) == 1
    ):
        return []
    values["worker_num_splits"] = 1
    return [
        "--worker_num_splits=1 chosen by --policy_workers_per_policy=0 (each rollout worker acts on "
        "its envs itself, so a second split has no other process's inference to overlap with; pass "
        "--worker_num_splits to choose)."
    ]


def sampler_only_splits(values: dict[str, Any], given: set[str], sampler_only: bool) -> list[str]:
    """For a sampler-only algorithm (`--algo=DUMMY_SAMPLER`) whose `--num_envs_per_worker` is not a
    multiple of `--worker_num_splits`, with the splits neither given nor saved: sets them to 1 in
    `values` and returns the log line that says so ([] otherwise).

    Why: Sample Factory's dummy sampler has no splits (each worker steps its envs in turn, one env
    per worker by default), so its seed line `--num_workers=20 --num_envs_per_worker=1` must run
    as written; the refusal stays for a learning algorithm, as in Sample Factory's APPO, and for
    splits that were asked for."""
    splits = values.get("worker_num_splits", 1)
    if not sampler_only or "worker_num_splits" in given or values.get("num_envs_per_worker", 1) % splits == 0:
        return []
    values["worker_num_splits"] = 1
    return [
        f"--worker_num_splits=1 chosen for {values.get('algo')} with --num_envs_per_worker="
        f"{values.get('num_envs_per_worker')} (not a multiple of {splits}): a sampler without learning "
        "needs no double-buffered splits, as Sample Factory's dummy sampler has none (pass "
        "--worker_num_splits to choose)."
    ]


def default_notes(cfg: Config) -> list[str]:
    """The defaults other flags chose (`acting_in_workers_splits`), one log line each."""
    return list(getattr(cfg, DEFAULT_NOTES_ATTR, ()))


def resume_notes(cfg: Config) -> list[str]:
    """The flags a resumed run's command changed against its saved cfg.json, one line each
    ("Parameter lr changed on resume: 0.001 (saved) -> 0.0003 (command line)"), for the run's log."""
    return list(getattr(cfg, RESUME_NOTES_ATTR, ()))
