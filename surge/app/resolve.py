"""Config resolution: one `Config` from the command line, our YAML, rl_games' YAML and the saved
config of a resumed run, validated by the preflight before anything starts.

Precedence, lowest to highest: `Config` defaults < the env family's overrides (for a plain
gymnasium id, which no family claims: the defaults its spaces choose, `surge.cfg.space_defaults`)
< the algorithm's overrides < the YAML file of `--cfg` < flags on the command line. When the
experiment folder already holds a `cfg.json` and `--restart_behavior=resume` (the default), the
saved config replaces the defaults and the family's (or the spaces') overrides; what the YAML file
and the flags give still wins, and each value they change is logged as a warning naming its
source. YAML values go through the same type conversion as flags. `--restart_behavior` is the
command's own choice: it is not saved, and a saved value is ignored.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import surge.app.builtins  # noqa: F401  (the registries' built-in algorithms and env families)
from surge.app.cfg_file import load_yaml, player_values
from surge.app.preflight import validate_cfg
from surge.app.rl_games.translation import is_rl_games_yaml, keep_num_actors
from surge.app.space_defaults import env_space_defaults
from surge.cfg.cli import (
    COMMAND_ONLY,
    DEFAULT_NOTES_ATTR,
    FIELD_DEFAULTS_ATTR,
    GIVEN_ATTR,
    RESUME_NOTES_ATTR,
    FlagParser,
    acting_in_workers_splits,
    check_known,
    experiment_path,
    int_flag,
    refuse_unknown_args,
    sampler_only_splits,
    str2bool,
    version_text,
)
from surge.cfg.config import Config, core_fields
from surge.cfg.saved_code import MODULE_FLAGS, refuse_code_from_saved_cfg
from surge.cfg.space_defaults import as_overrides
from surge.cfg.validate import check_experiment_name
from surge.cfg.yaml_files import convert_yaml, read_yaml, yaml_name
from surge.envs.probe import probe_spaces, uses_space_defaults
from surge.envs.registry import check_env_name, find_family
from surge.errors import ConfigError, SurgeError
from surge.learning.algorithm import get_algorithm
from surge.learning.run_flags import (
    algo_section,
    build_parser,
    field_defaults,
    flag_fields,
    refuse_other_algorithm_flags,
)
from surge.runtime.env_checks import check_env_spaces


def _saved_algo(pre_args: argparse.Namespace, yaml_values: dict[str, Any], evaluation: bool) -> str | None:
    """The `--algo` saved in the cfg.json of the run this command resumes (or `surge enjoy`
    plays), read before the parser exists so that the flags of that algorithm's section are
    known; None when there is no such run or `--restart_behavior` does not resume."""
    defaults = {f.name: f.default for f in core_fields()}

    def given(key: str) -> Any:
        value = getattr(pre_args, key)
        return value if value is not None else yaml_values.get(key, defaults[key])

    train_dir, experiment = given("train_dir"), given("experiment")
    if not isinstance(train_dir, str) or not isinstance(experiment, str):
        return None
    check_experiment_name(train_dir, experiment)  # before a cfg.json outside --train_dir is read
    path = experiment_path(train_dir, experiment) / "cfg.json"
    if not path.is_file() or not (evaluation or given("restart_behavior") == "resume"):
        return None
    try:
        saved = json.loads(path.read_text()).get("algo")
    except (OSError, ValueError):
        return None  # reported where the full parse reads it
    if not isinstance(saved, str):
        return None
    refuse_code_from_saved_cfg({"algo": saved}, ["algo"], train_dir, path)  # before it is imported
    return saved


def _space_inputs(yaml_values: dict[str, Any], pre_args: argparse.Namespace) -> dict[str, Any]:
    """`env_wrappers`, `use_rnn`, `rollout` and `train_for_seconds` as YAML and the command line give them (the flags
    win), for `env_space_defaults`; a malformed value is left out here and reported by the full
    parser with the flag's name."""
    out: dict[str, Any] = {}
    inputs = (
        ("env_wrappers", list),
        ("use_rnn", str2bool),
        ("rollout", int_flag),
        ("train_for_seconds", int_flag),
    )
    for name, convert in inputs:
        for value in (yaml_values.get(name), getattr(pre_args, name)):
            if value is None:
                continue
            try:
                out[name] = convert(value)
            except (argparse.ArgumentTypeError, ValueError, TypeError):
                pass
    return out


def parse_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Parses and validates a full config from the command line (see the module docstring).

    Raises:
        ConfigError: unknown flags (all of them named), value of the wrong type or out of range,
            unknown env (a family's mistyped name included: `check_env_name`), or an
            inconsistent combination (e.g. rollout not a multiple of recurrence).
        EnvError: an env without a family (a gymnasium id, `package.module:EnvId`) that cannot be
            made, or whose spaces this config cannot train on (`check_env_spaces`, the message
            gives the flags that fix it); a family's env that needs a missing package to check
            its name (ale-py for `atari_`).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    # raises ConfigError too (a bare `--algo` or `--env` without a value is refused, not exited on)
    pre = FlagParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--env", default=None)
    pre.add_argument("--algo", default=None)
    pre.add_argument("--cfg", default="")
    pre.add_argument("-h", "--help", action="store_true")
    pre.add_argument("--version", action="store_true")
    # what the spaces' defaults depend on (`env_space_defaults`), read before the full parser exists
    pre.add_argument("--env_wrappers", nargs="*", default=None)
    pre.add_argument("--use_rnn", nargs="?", const="True", default=None)
    pre.add_argument("--rollout", default=None)
    pre.add_argument("--train_for_seconds", default=None)
    # where a saved run is, whose algorithm decides which section's flags exist (resume, enjoy)
    pre.add_argument("--train_dir", default=None)
    pre.add_argument("--experiment", default=None)
    pre.add_argument("--restart_behavior", default=None)
    pre_args, _ = pre.parse_known_args(argv)
    if pre_args.version:
        print(version_text())
        raise SystemExit(0)
    yaml_values = load_yaml(pre_args.cfg, evaluation) if pre_args.cfg else {}
    env = pre_args.env or yaml_name(yaml_values, "env", pre_args.cfg)
    if not env and pre_args.help:
        family = None
    elif pre_args.help:
        family = find_family(env or "")  # --help lists the family's flags even where its package is missing
    else:
        # a mistyped name of a family (atari_breakot) is refused here, before any file is written
        family = check_env_name(env or "")
    algo = (
        pre_args.algo
        or yaml_name(yaml_values, "algo", pre_args.cfg)
        or _saved_algo(pre_args, yaml_values, evaluation)
        or "APPO"
    )
    fields = flag_fields(family, evaluation, algo)
    given = _space_inputs(yaml_values, pre_args)
    try:
        rules = env_space_defaults(family, env or "", given, algo)
    except SurgeError:
        if not pre_args.help:
            raise
        rules = []  # --help works for an env that cannot be made here
    defaults = field_defaults(family, algo, evaluation, as_overrides(rules))
    prog = "surge enjoy" if evaluation else "surge train"
    parser = build_parser(fields, defaults, prog, family, algo)
    if pre_args.help:
        parser.print_help()
        raise SystemExit(0)
    known = set(defaults)
    explicit_ns, unknown = parser.parse_known_args(argv)
    refuse_other_algorithm_flags(unknown, algo, "the command line")
    refuse_unknown_args(unknown, known)
    explicit = vars(explicit_ns)
    for action in parser._actions:  # argparse turns `--flag=--` into [] even for a one-value flag
        if action.nargs != "*" and isinstance(explicit.get(action.dest), list):
            raise ConfigError(
                action.dest, "expected one value, got '--'.", f"pass --{action.dest}=VALUE (see --help)."
            )
    refuse_other_algorithm_flags(
        [f"--{k}" for k in yaml_values if k not in known], algo, f"--cfg {pre_args.cfg}"
    )
    check_known(yaml_values, known, f"--cfg {pre_args.cfg}")
    yaml_values = convert_yaml(yaml_values, parser, pre_args.cfg, defaults)
    if "num_workers" in explicit and pre_args.cfg:
        if is_rl_games_yaml(read_yaml(pre_args.cfg)):  # --num_workers keeps the file's num_actors
            keep_num_actors(yaml_values, explicit)
    overrides = {**yaml_values, **explicit}

    values = dict(defaults)
    train_dir = overrides.get("train_dir", defaults["train_dir"])
    experiment = overrides.get("experiment", defaults["experiment"])
    check_experiment_name(train_dir, experiment)  # before a cfg.json outside --train_dir is read
    saved_path = experiment_path(train_dir, experiment) / "cfg.json"
    restart = overrides.get("restart_behavior", defaults["restart_behavior"])
    changed_on_resume: list[str] = []
    saved_keys: set[str] = set()
    if saved_path.is_file() and (evaluation or restart == "resume"):
        saved = {k: v for k, v in json.loads(saved_path.read_text()).items() if k not in COMMAND_ONLY}
        saved_keys = set(saved)
        # modules the saved values name are imported below: never one from inside --train_dir
        refuse_code_from_saved_cfg(
            saved, [f for f in MODULE_FLAGS if f not in overrides], train_dir, saved_path
        )
        saved_algo = saved.get("algo")
        if "algo" not in overrides and isinstance(saved_algo, str) and saved_algo != algo:
            # the saved run's algorithm decides its section's flags (resume, enjoy): parse again
            # as if its --algo had been given
            return parse_cfg([f"--algo={saved_algo}", *argv], evaluation)
        for k, v in saved.items():
            if k in values:
                values[k] = v
        if evaluation and not pre_args.cfg and isinstance(saved.get("cfg"), str) and saved["cfg"]:
            # enjoy of a run trained from an rl_games file: its `player` block, below the flags
            values.update({k: v for k, v in player_values(saved["cfg"]).items() if k not in overrides})
        for k, v in overrides.items():
            if k in saved and saved[k] != v and not evaluation:
                source = "command line" if k in explicit else f"--cfg {pre_args.cfg}"
                changed_on_resume.append(
                    f"Parameter {k} changed on resume: {saved[k]!r} (saved) -> {v!r} ({source})"
                )
    values.update(overrides)
    default_notes = acting_in_workers_splits(values, set(overrides) | saved_keys)
    sampler_only = get_algorithm(algo).capabilities.sampler_only
    default_notes += sampler_only_splits(values, set(overrides) | saved_keys, sampler_only)
    cfg = Config.from_flat(values, family.extra_params if family else None, evaluation, algo_section(algo))
    # the run logs them once its log file is open (`resume_notes`): logged here they would reach
    # the console only, or a previous run's log in the same Python process
    setattr(cfg, RESUME_NOTES_ATTR, changed_on_resume)
    setattr(cfg, DEFAULT_NOTES_ATTR, default_notes)
    setattr(cfg, GIVEN_ATTR, frozenset(overrides))
    setattr(cfg, FIELD_DEFAULTS_ATTR, dict(defaults))
    validate_cfg(cfg)
    if uses_space_defaults(family):
        # the env was made once for its spaces (`probe_spaces`, cached): spaces this config cannot
        # train on are refused here, before the experiment folder and its log are written
        obs_space, action_space = probe_spaces(cfg.env, tuple(cfg.env_wrappers or ()))
        check_env_spaces(cfg, obs_space, action_space, memory=False)
    return cfg
