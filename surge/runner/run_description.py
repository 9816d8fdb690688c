"""A sweep described in a user's module: `ParamGrid`, `ParamList`, `Experiment`, `RunDescription`.

Sample Factory's launcher API with its names and its folder naming (sample_factory/launcher/
run_description.py), so a Sample Factory run module runs here with `python -m surge.train` as its
command. A module defines `RUN_DESCRIPTION`; `python -m surge.runner.run --run=MODULE` runs it
(docs/runner.md).

Folders: experiment `i` of `Experiment(name, cmd, grid)` in `RunDescription(run_name, ...)` trains
in `train_dir/run_name/name[_suffix]/NN_name_<p1>_<v1>_<p2>_<v2>...` where `<p>` abbreviates a
parameter (Sample Factory's shorthand: the first letter of each `._-`-separated word but the last,
then the last word's first three letters, more where two parameters would collide):
`learning_rate=0.001, seed=1` -> `00_cartpole_l.rat_0.001_see_1`.
"""

from __future__ import annotations

import itertools
import logging
import random
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("surge")

#: names longer than this are legal but awkward in `ls` and TensorBoard (Sample Factory warns too)
LONG_NAME = 100


class ParamGenerator:
    """Yields dicts of parameters, one per experiment."""

    def generate_params(self, randomize: bool = True) -> Iterator[dict[str, Any]]:
        raise NotImplementedError


class ParamList(ParamGenerator):
    """An explicit list of parameter dicts, e.g. `ParamList([{"seed": 1}, {"seed": 2, "gamma": 0.9}])`."""

    def __init__(self, combinations: Sequence[dict[str, Any]]):
        self.combinations = list(combinations)

    def generate_params(self, randomize: bool = True) -> Iterator[dict[str, Any]]:
        combinations = list(self.combinations)
        if randomize:
            random.shuffle(combinations)
        yield from combinations


class ParamGrid(ParamGenerator):
    """Every combination of the values of each parameter, the last parameter varying fastest.

    `ParamGrid([("learning_rate", [1e-3, 3e-4]), ("seed", [1, 2])])` yields
    `{learning_rate: 0.001, seed: 1}, {0.001, 2}, {0.0003, 1}, {0.0003, 2}`. A key may be a tuple of
    names whose values are tuples (parameters that change together):
    `(("rollout", "batch_size"), [(32, 512), (64, 1024)])`. A dict (`{name: values}`, in its order)
    is accepted too, as Sample Factory does.

    Raises:
        ValueError: a parameter with no values, a tuple key whose value has another length, or the
            same parameter named twice.
    """

    def __init__(self, grid_tuples: Iterable[tuple[Any, Sequence[Any]]] | Mapping[Any, Sequence[Any]]):
        self.grid: dict[Any, list[Any]] = {}
        seen: set[str] = set()
        items = grid_tuples.items() if isinstance(grid_tuples, Mapping) else grid_tuples
        for key, values in items:
            values = list(values)
            names = list(key) if isinstance(key, (list, tuple)) else [key]
            if not values:
                raise ValueError(f"ParamGrid: parameter {key!r} has no values.")
            for name in names:
                if name in seen:
                    raise ValueError(f"ParamGrid: parameter {name!r} is given twice.")
                seen.add(name)
            if isinstance(key, (list, tuple)):
                for v in values:
                    if not isinstance(v, (list, tuple)) or len(v) != len(key):
                        raise ValueError(
                            f"ParamGrid: the values of {tuple(key)!r} must be tuples of {len(key)}, got {v!r}."
                        )
                key = tuple(key)
            self.grid[key] = values

    def generate_params(self, randomize: bool = False) -> Iterator[dict[str, Any]]:
        keys = list(self.grid)
        combinations = list(itertools.product(*(self.grid[k] for k in keys))) if keys else []
        if randomize:
            random.shuffle(combinations)
        for combination in combinations:
            params: dict[str, Any] = {}
            for key, value in zip(keys, combination, strict=True):
                if isinstance(key, tuple):
                    params.update(zip(key, value, strict=True))
                else:
                    params[key] = value
            yield params


def param_shorthand(param: str, used: list[str]) -> str:
    """Sample Factory's abbreviation of a parameter name for folder names: `learning_rate` ->
    `l.rat`, `seed` -> `see`; a longer prefix of the last word when `used` already holds it."""
    tokens = re.split("[._-]", param)
    head = [t[0] for t in tokens[:-1] if t]
    n = min(3, len(tokens[-1]))
    shorthand = ".".join(head + [tokens[-1][:n]])
    while n <= len(tokens[-1]) and shorthand in used:
        n += 1
        shorthand = ".".join(head + [tokens[-1][:n]])
    return shorthand


def _name_value(value: Any) -> str:
    """A parameter value as it appears in a folder name (no path separator, no whitespace)."""
    return re.sub(r"[/\s]", "_", str(value))


class Experiment:
    """One command and the parameter sets to run it with.

    Args:
        name: the base name of its folders (e.g. `cartpole`).
        cmd: the command the parameters are appended to, e.g.
            `python -m surge.train --env=CartPole-v1 --train_for_env_steps=100000`. A leading `python`
            runs with the runner's own interpreter (`sys.executable`).
        param_generator: a `ParamGrid`, `ParamList`, or any iterable of parameter dicts; empty: the
            command runs once as it is.
        env_vars: environment variables set for its processes (added to the runner's).
    """

    def __init__(
        self,
        name: str,
        cmd: str,
        param_generator: ParamGenerator | Iterable[dict[str, Any]] = (),
        env_vars: dict[str, Any] | None = None,
    ):
        self.base_name = name
        self.cmd = cmd
        if isinstance(param_generator, ParamGenerator):
            self.params = list(param_generator.generate_params(randomize=False))
        else:
            self.params = list(param_generator)
        self.env_vars = env_vars

    def generate_experiments(
        self, experiment_arg_name: str, customize_experiment_name: bool, param_prefix: str
    ) -> Iterator[tuple[str, str]]:
        """Yields `(cmd, experiment_name)` per parameter set (Sample Factory's scheme, see the module doc).
        Values are shell-quoted in `cmd` (`shlex.split` gives the tokens back)."""
        for idx, params in enumerate(self.params or [{}]):
            cmd_tokens = [self.cmd]
            name_tokens = [self.base_name]
            used: list[str] = []
            for param, value in params.items():
                cmd_tokens.append(shlex.quote(f"{param_prefix}{param}={value}"))
                shorthand = param_shorthand(str(param), used)
                used.append(shorthand)
                name_tokens.append(f"{shorthand}_{_name_value(value)}")
            if customize_experiment_name:
                name = f"{idx:02d}_" + "_".join(name_tokens)
                if len(name) > LONG_NAME:
                    log.warning("Experiment name is extra long (%d characters): %s", len(name), name)
            else:
                name = f"{idx:02d}_{self.base_name}"
            cmd_tokens.append(shlex.quote(f"{experiment_arg_name}={name}"))
            yield " ".join(cmd_tokens), name


@dataclass
class PlannedExperiment:
    """One experiment of a sweep, ready to run.

    Attributes:
        name: the `--experiment` value (`NN_base_p_v...`).
        cmd: the full command line (shell-quoted), `--experiment` and `--train_dir` included.
        train_dir: the `--train_dir` it gets: `<runner's train_dir>/<run_name>/<base>[_suffix]`.
        folder: its experiment folder, `train_dir/name` (holds `done` once it finished).
        env_vars: extra environment variables, or None.
    """

    name: str
    cmd: str
    train_dir: Path
    folder: Path
    env_vars: dict[str, Any] | None = field(default=None)

    @property
    def tokens(self) -> list[str]:
        return shlex.split(self.cmd)


class RunDescription:
    """A sweep: a name (the root folder under the runner's `--train_dir`) and its experiments.

    Args:
        run_name: the root folder's name.
        experiments: the `Experiment`s to run, in order.
        experiment_arg_name: the flag that names an experiment's folder (surge: `--experiment`).
        experiment_dir_arg_name: the flag of the folder experiments go in (surge: `--train_dir`).
        customize_experiment_name: put the parameters in the folder names (else `NN_base`).
        param_prefix: what precedes each parameter name on the command line (`--`).
    """

    def __init__(
        self,
        run_name: str,
        experiments: Sequence[Experiment],
        experiment_arg_name: str = "--experiment",
        experiment_dir_arg_name: str = "--train_dir",
        customize_experiment_name: bool = True,
        param_prefix: str = "--",
    ):
        self.run_name = run_name
        self.experiments = list(experiments)
        self.experiment_suffix = ""
        self.experiment_arg_name = experiment_arg_name
        self.experiment_dir_arg_name = experiment_dir_arg_name
        self.customize_experiment_name = customize_experiment_name
        self.param_prefix = param_prefix

    def _root_dir(self, experiment: Experiment) -> str:
        suffix = f"_{self.experiment_suffix}" if self.experiment_suffix else ""
        return str(Path(self.run_name) / f"{experiment.base_name}{suffix}")

    def generate_experiments(
        self, train_dir: str | Path, makedirs: bool = False
    ) -> Iterator[tuple[str, str, str, dict[str, Any] | None]]:
        """Yields Sample Factory's tuples `(cmd, experiment_name, root_dir, env_vars)`; `cmd` ends with
        `--train_dir=<train_dir>/<root_dir>`."""
        for exp in self.experiments:
            root_dir = self._root_dir(exp)
            exp_dir = Path(train_dir) / root_dir
            for cmd, name in exp.generate_experiments(
                self.experiment_arg_name, self.customize_experiment_name, self.param_prefix
            ):
                if makedirs:
                    exp_dir.mkdir(parents=True, exist_ok=True)
                cmd += " " + shlex.quote(f"{self.experiment_dir_arg_name}={exp_dir}")
                yield cmd, name, root_dir, exp.env_vars

    def plan(self, train_dir: str | Path) -> list[PlannedExperiment]:
        """Every experiment of the sweep, in order, with its folder.

        Raises:
            ValueError: two experiments would share a folder (two `Experiment`s with one name and
                equal parameters), or a name is not a plain folder name.
        """
        planned: list[PlannedExperiment] = []
        folders: dict[Path, str] = {}
        for cmd, name, root_dir, env_vars in self.generate_experiments(train_dir):
            if not name or name in (".", "..") or "/" in name or "\0" in name:
                raise ValueError(f"Experiment name {name!r} is not a folder name.")
            exp_train_dir = Path(train_dir) / root_dir
            folder = exp_train_dir / name
            if folder in folders:
                raise ValueError(
                    f"Two experiments of run {self.run_name!r} would share the folder {folder}: "
                    f"{folders[folder]!r} and {cmd!r}. Give the Experiments different names."
                )
            folders[folder] = cmd
            planned.append(PlannedExperiment(name, cmd, exp_train_dir, folder, env_vars))
        return planned
