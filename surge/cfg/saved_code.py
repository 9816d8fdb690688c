"""A saved cfg.json never makes surge import code from inside `--train_dir`.

A resume (and `surge enjoy`) takes `--algo`, `--env` and `--env_wrappers` from the experiment's
cfg.json when the command does not give them, and a value of the form `package.module:NAME` is
imported. With `python -m surge.train` the current folder is on `sys.path`, and a folder without
`__init__.py` is a namespace package, so a crafted cfg.json naming `train_dir.<experiment>.evil:X`
would run `train_dir/<experiment>/evil.py`: an experiment folder shared by a colleague or
downloaded with a model would be code. Such a name, taken from a saved cfg.json, is refused before
anything is imported; the same name given on the command line (the user's own choice) is not.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from surge.errors import ConfigError

#: the flags whose values can name a module to import
MODULE_FLAGS = ("algo", "env", "env_wrappers")


def module_names(flag: str, value: Any) -> list[str]:
    """The modules that `--flag=value` imports (`package.module:NAME`; a wrapper may also be
    `package.module.Class`); empty for built-in names."""
    values = value if flag == "env_wrappers" and isinstance(value, list) else [value]
    out = []
    for v in values:
        if not isinstance(v, str):
            continue
        if ":" in v:
            out.append(v.partition(":")[0])
        elif flag == "env_wrappers" and "." in v:
            out.append(v.rpartition(".")[0])
    return [m for m in out if m]


def path_inside(module: str, folder: Path) -> Path | None:
    """Where importing `module` (or one of its parent packages) would read a file or folder inside
    `folder` (or `folder` itself), else None. Finds the top-level package only (`find_spec` of a
    top-level name imports nothing) and works out the rest from its locations."""
    parts = module.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    folder = folder.resolve()
    roots = [Path(p) for p in (spec.submodule_search_locations or [])]
    if spec.origin and spec.origin not in ("built-in", "frozen", "namespace"):
        roots.append(Path(spec.origin))
    for root in roots:
        candidates = [root] + [root.joinpath(*parts[1:k]) for k in range(2, len(parts) + 1)]
        candidates += [c.with_name(c.name + ".py") for c in candidates[1:]]
        for c in candidates:
            r = c.resolve()
            if r == folder or folder in r.parents:
                return c
    return None


def refuse_code_from_saved_cfg(
    saved: dict[str, Any], flags: list[str], train_dir: str, cfg_file: Path
) -> None:
    """Refuses a module named by `saved[flag]` (the cfg.json `cfg_file`) that would be imported
    from inside `train_dir`.

    Raises:
        ConfigError: naming the flag, the module and the file it would run.
    """
    for flag in flags:
        for module in module_names(flag, saved.get(flag)):
            inside = path_inside(module, Path(train_dir))
            if inside is not None:
                raise ConfigError(
                    flag,
                    f"{cfg_file} names the module {module!r} ({saved[flag]!r}), which would be imported "
                    f"from {inside}, inside --train_dir={train_dir}: an experiment folder is data, "
                    "surge runs no code from it.",
                    f"if you trust that code, move it out of --train_dir and pass --{flag}=... on the "
                    "command line.",
                )
