"""The `--algo` registry: the registered `Algorithm` declarations by name, and `module:NAME`
loading of a user's algorithm. It needs nothing of the declaration's module at run time, so the
modules the declaration imports (its feed, the batcher) look an algorithm up here without an
import circle; `surge.learning.algorithm` re-exports it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from surge.cfg.config import register_algo_section
from surge.errors import ConfigError

if TYPE_CHECKING:  # the registry holds declarations: a type only, no import circle
    from surge.learning.algorithm import Algorithm

_ALGORITHMS: dict[str, Algorithm] = {}


def register_algorithm(algo: Algorithm) -> Algorithm:
    """Registers (or replaces) `algo` under `algo.name`, the value of `--algo`, and its config
    section (`params`) with the schema (`surge.cfg.config.register_algo_section`)."""
    _ALGORITHMS[algo.name] = algo
    if algo.params is not None:
        register_algo_section(algo.name, algo.params)
    return algo


def algorithm_names() -> list[str]:
    """Names of every registered algorithm."""
    return sorted(_ALGORITHMS)


#: NAME -> the `module:NAME` it was loaded as (what `--algo` must say in a fresh process)
_SPECS: dict[str, str] = {}


def algorithm_spec(name: str) -> str:
    """What `--algo` must say for the registered algorithm `name`: `module:NAME` for one loaded
    from a user's module, else `name`."""
    return _SPECS.get(name, name)


def registered_algorithm(name: str) -> Algorithm | None:
    """The algorithm registered as `name` (a built-in, or a `module:NAME` this process already
    loaded), without importing anything else; None if there is none. For names read from a
    saved file, where importing a module named there would run code (`surge.cfg.saved_code`)."""
    if name in _ALGORITHMS:
        return _ALGORITHMS[name]
    _, _, algo_name = name.partition(":")
    if algo_name and _SPECS.get(algo_name) == name:
        return _ALGORITHMS.get(algo_name)
    return None


def get_algorithm(name: str) -> Algorithm:
    """The algorithm registered as `name`; `module:NAME` (as `--env` takes `package.module:EnvId`)
    first imports `module`, which registers NAME when imported (`register_algorithm` at its top
    level). Every process resolves `--algo` through here (the spawned children too), so a user's
    algorithm is loaded wherever the config is rebuilt. The built-in algorithms are registered by
    `surge.app.builtins`, which the entry points import: this registry imports none itself.

    Raises:
        ConfigError: no algorithm of that name (the message lists the registered ones), or
            `module` cannot be imported, or it registers no NAME.
    """
    if ":" in name and name not in _ALGORITHMS:
        module, _, algo_name = name.partition(":")
        if not module or not algo_name:
            raise ConfigError(
                "algo", f"{name!r} is not of the form module:NAME.", "e.g. --algo=my_pkg.algos:MY_ALGO."
            )
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ConfigError(
                "algo",
                f"cannot import the module {module!r} of --algo={name}: {e}.",
                "give a module importable from this directory or PYTHONPATH (dotted path, no .py).",
            ) from e
        if algo_name not in _ALGORITHMS:
            raise ConfigError(
                "algo",
                f"the module {module!r} registers no algorithm {algo_name!r}.",
                f"registered: {', '.join(algorithm_names())}; the module must call register_algorithm "
                "when imported.",
            )
        _SPECS[algo_name] = name
        return _ALGORITHMS[algo_name]
    if name not in _ALGORITHMS:
        raise ConfigError(
            "algo",
            f"unknown algorithm {name!r}.",
            f"use one of {', '.join(algorithm_names())}, or module:NAME.",
        )
    return _ALGORITHMS[name]


# --- pieces several algorithms share -------------------------------------------------------------
