"""The defaults an env's spaces choose for the run being resolved: the algorithm's rules or the
policy-gradient ones (`surge.cfg.space_defaults`) for the spaces of a plain gymnasium id, read
from the env made once (`surge.envs.probe.probe_spaces`), and the run log's lines on them."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from surge.cfg.budget import budget_default
from surge.cfg.config import Config
from surge.cfg.space_defaults import SpaceDefault, describe, space_defaults
from surge.envs.probe import probe_spaces, uses_space_defaults
from surge.envs.registry import EnvFamily, find_family, resolve_wrapper
from surge.errors import SurgeError
from surge.learning.algorithm import get_algorithm


def chosen_space_defaults(
    algo: str, observation_space: gym.Space, action_space: gym.Space, given: dict[str, Any]
) -> list[SpaceDefault]:
    """The defaults of `--algo=algo` for an env with these spaces: the algorithm's own rules
    (`Algorithm.space_defaults`) or, when it declares none, the policy-gradient ones of
    `space_defaults`; then, unless the rules chose one, the training budget of the observation
    space (`surge.cfg.budget.budget_default`) for an algorithm that trains. A run given
    `train_for_seconds` gets no step budget from either.

    Args:
        given: the values YAML and the command line give so far (`use_rnn`, `rollout`,
            `train_for_seconds`; absent when not given).

    Raises:
        ConfigError: `algo` is not a registered algorithm.
    """
    algorithm = get_algorithm(algo)
    if algorithm.space_defaults is not None:
        rules = list(algorithm.space_defaults(observation_space, action_space, given))
    else:
        rules = space_defaults(
            observation_space, action_space, bool(given.get("use_rnn", False)), int(given.get("rollout", 32))
        )
    if "train_for_seconds" in given:  # the run stops by the clock the user set
        return [r for r in rules if r.field != "train_for_env_steps"]
    if algorithm.trains and not any(r.field == "train_for_env_steps" for r in rules):
        rules.append(budget_default(observation_space))
    return rules


def space_default_notes(cfg: Config) -> list[str]:
    """The run's log lines for the defaults its env's spaces chose (`describe`); [] for an env of
    a family, or one that cannot be made here (the run's own env creation reports why)."""
    try:
        if not uses_space_defaults(find_family(cfg.env)):
            return []
        obs_space, action_space = probe_spaces(cfg.env, tuple(getattr(cfg, "env_wrappers", None) or ()))
    except SurgeError:
        return []
    given = {"use_rnn": bool(cfg.use_rnn), "rollout": int(cfg.rollout)}
    named = frozenset(getattr(cfg, "_given_fields", ()))  # surge.cfg.cli.GIVEN_ATTR
    return describe(chosen_space_defaults(cfg.algo, obs_space, action_space, given), cfg, named)


def env_space_defaults(
    family: EnvFamily | None, env: str, given: dict[str, Any], algo: str = "APPO"
) -> list[SpaceDefault]:
    """The defaults chosen by the spaces of `env` when no family claims it (a plain gymnasium id
    or `package.module:EnvId`): the env is made once (`probe_spaces`, with the `env_wrappers` of
    `given`) and the rules of `algo` applied (`chosen_space_defaults`). [] for an env of a family.

    Args:
        given: values from YAML and the command line so far (`env_wrappers`, `use_rnn`, `rollout`,
            `train_for_seconds`).

    Raises:
        ConfigError, EnvError: the env cannot be made (unknown id, missing package, ...), or `algo`
            is not registered.
    """
    if not uses_space_defaults(family):
        return []
    wrappers = tuple(given.get("env_wrappers") or ())
    # before the cached probe hashes them: a YAML `env_wrappers: [[]]` is refused by name
    for name in wrappers:
        if not isinstance(name, str):
            resolve_wrapper(name)
    obs_space, action_space = probe_spaces(env, wrappers)
    return chosen_space_defaults(algo, obs_space, action_space, {"rollout": Config.rollout, **given})
