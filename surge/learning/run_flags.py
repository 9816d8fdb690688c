"""The flags of a run of one env family and one algorithm, looked up in their registries by name:
the core `Config` fields with the family's section and the algorithm's (`flag_fields`), their
defaults after the family's and the algorithm's overrides (`field_defaults`), the `--help` parser of
them (`build_parser`), and a child process's config rebuilt from its flat values (`rebuild_cfg`).
It sits beside the algorithm registry: the schema (`surge.cfg`) knows no family and no algorithm.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from surge.cfg.cli import FIELD_DEFAULTS_ATTR, FlagParser, config_sections, flag_converter, int_flag, str2bool
from surge.cfg.config import Config, EvalParams, core_fields
from surge.envs.registry import EnvFamily, find_family
from surge.errors import ConfigError, SurgeError
from surge.learning.algorithm import algorithm_names, algorithm_spec, get_algorithm


def algo_section(algo: str | None) -> type | None:
    """The `Algorithm.params` dataclass of `--algo=algo` (None: the algorithm declares none)."""
    if algo is None:
        return None
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
    section = algo_section(algo)
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
    out: dict[str, Any] = {}
    for f in flag_fields(family, evaluation, algo):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        else:
            out[f.name] = f.default_factory()  # type: ignore[misc,operator]
    if family:
        # a family's default for another algorithm's flag (Atari's --ppo_clip_ratio, APPO's section)
        # applies to runs of that algorithm only
        others = _other_algorithms_flags(algo)
        unknown = set(family.default_overrides) - set(out) - others
        if unknown:
            raise ConfigError(
                sorted(unknown)[0],
                f"family {family.prefix!r} overrides an unknown parameter.",
                "fix the family's default_overrides.",
            )
        out.update({k: v for k, v in family.default_overrides.items() if k in out})
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


def _other_algorithms_flags(algo: str) -> set[str]:
    """The flags of the registered algorithms' sections other than `algo`'s (`Algorithm.params`)."""
    own = algo_section(algo)
    own_names = {f.name for f in dataclasses.fields(own)} if own is not None else set()
    out: set[str] = set()
    for name in algorithm_names():
        section = get_algorithm(name).params
        if section is not None:
            out.update(f.name for f in dataclasses.fields(section))
    return out - own_names


def run_field_defaults(cfg: Config) -> dict[str, Any]:
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


def _help_group(
    name: str, family: EnvFamily | None, sections: dict[str, str], algo: str | None = None
) -> str:
    """The `--help` section of field `name`: its `Config` section, the family's, enjoy's, or the
    algorithm's ("algorithm NAME")."""
    if name in sections:
        return sections[name]
    if family and family.extra_params and name in {f.name for f in dataclasses.fields(family.extra_params)}:
        return f"env family {family.prefix}"
    section = algo_section(algo)
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
    p = FlagParser(
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
            kw.update(nargs="*", type=int_flag if item is int else item)
        else:
            kw["type"] = flag_converter(f, d)
            if kw["type"] is str2bool:  # Sample Factory's bare form: --no_render means True
                kw.update(nargs="?", const=True, metavar="True|False")
        if "choices" in f.metadata:
            kw["choices"] = f.metadata["choices"]
        groups[title].add_argument(f"--{f.name}", **kw)
    return p


def refuse_other_algorithm_flags(unknown: list[str], algo: str, source: str) -> None:
    """Refuses a flag that is not this run's but belongs to another registered algorithm's section
    (`Algorithm.params`), saying whose it is.

    Raises:
        ConfigError: one of `unknown` (`--name` or `--name=value` tokens) is another algorithm's flag.
    """
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
    return Config.from_flat(values, family.extra_params, evaluation, algo_section(algo))
