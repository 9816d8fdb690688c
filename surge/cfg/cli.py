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

from surge.cfg.config import SECTIONS, Config, EvalParams, core_fields
from surge.envs.registry import EnvFamily, find_family
from surge.errors import ConfigError, SurgeError

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


def _int(v: str) -> int:
    """Integers, also written as 1e9 or 4_000_000."""
    try:
        f = float(str(v).replace("_", ""))
    except ValueError:  # argparse would say "invalid _int value"
        raise argparse.ArgumentTypeError(f"expected an integer, got {v!r}") from None
    if not f.is_integer():
        raise argparse.ArgumentTypeError(f"expected an integer, got {v!r}")
    return int(f)


def _optional_int(v: str) -> int | None:
    return None if str(v).lower() in ("none", "null", "") else _int(v)


def _optional_float(v: str) -> float | None:
    return None if str(v).lower() in ("none", "null", "") else float(v)


def _optional_str(v: str) -> str | None:
    return None if str(v).lower() in ("none", "null", "") else str(v)


def _converter(f: dataclasses.Field, default: Any):
    if isinstance(default, bool):
        return str2bool
    if isinstance(default, int):
        return _int
    if isinstance(default, float):
        return float
    if default is None:
        if "str" in str(f.type):
            return _optional_str
        return _optional_float if "float" in str(f.type) else _optional_int
    return str


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # raise instead of exiting, so callers get a ConfigError
        field = ""
        if message.startswith("argument --"):
            named, _, rest = message.partition(": ")
            field = named.split()[1].lstrip("-").split("/")[0]
            message = rest or message  # ConfigError names the flag once, as --FIELD:
        if not message.endswith("."):
            message += "."
        raise ConfigError(field or "command line", message, "see `surge train --env=ENV --help`.")


def _algo_section(algo: str | None) -> type | None:
    """The `Algorithm.params` dataclass of `--algo=algo` (None: the algorithm declares none)."""
    if algo is None:
        return None
    from surge.learning.algorithm import get_algorithm

    return get_algorithm(algo).params


def flag_fields(
    family: EnvFamily | None, evaluation: bool = False, algo: str | None = None
) -> list[dataclasses.Field]:
    """Every flag of a run of `family`, in `--help` order: the core `Config` fields, the family's
    (`EnvFamily.extra_params`, the section `cfg.env_params`), with `evaluation` enjoy's
    (`EvalParams`, the section `cfg.eval_params`) and, with `algo`, the algorithm's
    (`Algorithm.params`, the section `cfg.algo_params`). A name in two sections is one flag, with
    the first one's help and default (the Doom family's `--fps` sets enjoy's too).

    Raises:
        ConfigError: `algo` is not a registered algorithm (or its module cannot be imported).
    """
    sources = [core_fields()]
    if family and family.extra_params:
        sources.append(dataclasses.fields(family.extra_params))
    if evaluation:
        sources.append(dataclasses.fields(EvalParams))
    section = _algo_section(algo)
    if section is not None:
        sources.append(dataclasses.fields(section))
    out: dict[str, dataclasses.Field] = {}
    for src in sources:
        for f in src:
            out.setdefault(f.name, f)
    return list(out.values())


def field_defaults(
    family: EnvFamily | None,
    algo: str = "APPO",
    evaluation: bool = False,
    space_overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Default value of every flag (`flag_fields`), with the env family's overrides (or, for an
    env no family claims, the defaults its spaces chose: `space_overrides`, see
    `env_space_defaults`) and then the algorithm's applied (`EnvFamily.default_overrides`,
    `Algorithm.default_overrides`).

    Raises:
        ConfigError: `algo` is not a registered algorithm, or an override names no parameter.
    """
    from surge.learning.algorithm import get_algorithm

    out: dict[str, Any] = {}
    for f in flag_fields(family, evaluation, algo):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        else:
            out[f.name] = f.default_factory()  # type: ignore[misc,operator]
    if family:
        unknown = set(family.default_overrides) - set(out)
        if unknown:
            raise ConfigError(
                sorted(unknown)[0],
                f"family {family.prefix!r} overrides an unknown parameter.",
                "fix the family's default_overrides.",
            )
        out.update(family.default_overrides)
    algorithm = get_algorithm(algo)
    # no default is chosen for a parameter the algorithm ignores (it would be reported as idle)
    chosen = {
        k: v for k, v in (space_overrides or {}).items() if k in out and k not in algorithm.unused_params
    }
    # an algorithm's own rules for these spaces are its choice over its general defaults; the
    # policy-gradient rules are below an algorithm's overrides (A2C's learning rate wins)
    own = algorithm.space_defaults is not None
    if not own:
        out.update(chosen)
    for name, value in algorithm.default_overrides.items():  # a callable chooses from the defaults so far
        out[name] = value(out) if callable(value) else value
    if own:
        out.update(chosen)
    return out


def run_field_defaults(cfg: Any) -> dict[str, Any]:
    """This run's default of every flag: those `surge.app.resolve.parse_cfg` used (the defaults the
    env's spaces chose included), else `field_defaults` for its env family and
    algorithm; the dataclasses' own defaults for a config of an env not registered here."""
    parsed = getattr(cfg, FIELD_DEFAULTS_ATTR, None)
    if parsed is not None:  # a chosen default is the run's, not a flag the user set
        return dict(parsed)
    try:
        return field_defaults(find_family(cfg.env), cfg.algo, cfg.eval_params is not None)
    except SurgeError:  # a config built by hand for an env that is not registered here
        pass
    out = {}
    sections = [core_fields()] + [
        dataclasses.fields(p)
        for p in (cfg.env_params, cfg.eval_params, cfg.algo_params)
        if dataclasses.is_dataclass(p)
    ]
    for f in (f for fields in sections for f in fields):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def config_sections() -> dict[str, str]:
    """Field name -> its section of `Config` ("experiment", "sampling", ...; `SECTIONS`)."""
    return {f.name: title for title, cls in SECTIONS for f in dataclasses.fields(cls)}


def _help_group(
    name: str, family: EnvFamily | None, sections: dict[str, str], algo: str | None = None
) -> str:
    """The `--help` section of field `name`: its `Config` section, the family's, enjoy's, or the
    algorithm's ("algorithm NAME")."""
    if name in sections:
        return sections[name]
    if family and family.extra_params and name in {f.name for f in dataclasses.fields(family.extra_params)}:
        return f"env family {family.prefix}"
    section = _algo_section(algo)
    if section is not None and name in {f.name for f in dataclasses.fields(section)}:
        return f"algorithm {algo}"
    if name in {f.name for f in dataclasses.fields(EvalParams)}:
        return "enjoy"
    return "other"


def build_parser(
    fields: list[dataclasses.Field],
    defaults: dict[str, Any],
    prog: str = "surge train",
    family: EnvFamily | None = None,
    algo: str | None = None,
) -> argparse.ArgumentParser:
    """An argparse parser with one `--flag` per field of `fields` (`flag_fields`); values not given stay absent (SUPPRESS).
    Boolean flags take `--flag=True/False`, `--flag False` or the bare `--flag` (True). `--help`
    lists the flags by section (`config_sections`), then the family's (`family`), enjoy's and
    the algorithm's (`algo`, under "algorithm NAME")."""
    p = _Parser(
        prog=prog,
        usage=f"{prog} --env=ENV [--experiment=NAME] [--flag=value ...]",
        argument_default=argparse.SUPPRESS,
        allow_abbrev=False,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Flags take --name=value; booleans also the bare --name (True). --version prints the version.",
    )
    sections = config_sections()
    groups: dict[str, argparse._ArgumentGroup] = {}
    for f in fields:
        title = _help_group(f.name, family, sections, algo)
        if title not in groups:
            groups[title] = p.add_argument_group(title)
        d = defaults[f.name]
        kw: dict[str, Any] = {"help": f"{f.metadata.get('help', '')} (default: {d!r})"}
        if isinstance(d, list):
            item = f.metadata.get("item_type", int)
            kw.update(nargs="*", type=_int if item is int else item)
        else:
            kw["type"] = _converter(f, d)
            if kw["type"] is str2bool:  # Sample Factory's bare form: --no_render means True
                kw.update(nargs="?", const=True, metavar="True|False")
        if "choices" in f.metadata:
            kw["choices"] = f.metadata["choices"]
        groups[title].add_argument(f"--{f.name}", **kw)
    return p


def _check_known(values: Any, known: set[str], source: str) -> None:
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


def refuse_other_algorithm_flags(unknown: list[str], algo: str, source: str) -> None:
    """Refuses a flag that is not this run's but belongs to another registered algorithm's section
    (`Algorithm.params`), saying whose it is.

    Raises:
        ConfigError: one of `unknown` (`--name` or `--name=value` tokens) is another algorithm's flag.
    """
    from surge.learning.algorithm import algorithm_names, algorithm_spec, get_algorithm

    if not unknown:
        return
    owners: dict[str, list[str]] = {}
    for name in algorithm_names():
        section = get_algorithm(name).params
        if name != algo and section is not None:
            for f in dataclasses.fields(section):
                owners.setdefault(f.name, []).append(name)
    for token in unknown:
        flag = token.split("=")[0][2:] if token.startswith("--") else ""
        if flag in owners:
            whose = " and ".join(owners[flag])
            raise ConfigError(
                flag,
                f"is a flag of --algo={whose}'s section, not of --algo={algo}'s (in {source}).",
                f"pass --algo={algorithm_spec(owners[flag][0])} to use it, or remove it.",
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
    _check_known(flags, known, source)
    flag = unknown[0].split("=")[0].lstrip("-")
    raise ConfigError(
        flag if flag in known else "command line",
        f"unexpected argument {unknown[0]!r}.",
        "flags take the form --name=value (a list flag: --name v1 v2).",
    )


def version_text() -> str:
    """`surge <version>`, what `--version` prints."""
    from surge import __version__

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


def rebuild_cfg(values: dict[str, Any], evaluation: bool = False) -> Config:
    """The config object of `values` (a `to_dict()`), its family's section included: how child
    processes get their config (a flat dict crosses the process boundary).

    Raises:
        ConfigError: the env's family is not registered in this process (register user families
            at import time of a module, not inside `if __name__ == "__main__"`).
    """
    family = find_family(values["env"])
    algo = values.get("algo", "APPO")
    known = {f.name for f in flag_fields(family, evaluation, algo)}
    missing = set(values) - known
    if missing:
        raise ConfigError(
            sorted(missing)[0],
            f"is not a parameter in this process: the family of {values['env']!r} is "
            "registered differently here.",
            "register custom env families at import time of your module.",
        )
    return Config.from_flat(values, family.extra_params, evaluation, _algo_section(algo))


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


def default_notes(cfg: Config) -> list[str]:
    """The defaults other flags chose (`acting_in_workers_splits`), one log line each."""
    return list(getattr(cfg, DEFAULT_NOTES_ATTR, ()))


def resume_notes(cfg: Config) -> list[str]:
    """The flags a resumed run's command changed against its saved cfg.json, one line each
    ("Parameter lr changed on resume: 0.001 (saved) -> 0.0003 (command line)"), for the run's log."""
    return list(getattr(cfg, RESUME_NOTES_ATTR, ()))
