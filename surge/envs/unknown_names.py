"""What to say of an `--env` name that no family and no gymnasium id knows, when we know why.

Two cases a generic "unknown env" misleads on: ids that a package registers with gymnasium only
when it is imported (MiniGrid's `MiniGrid-Empty-5x5-v0`), which work in gymnasium's
`package.module:EnvId` form; and DMLab (the seeds' `dmlab_30` line), which surge cannot make here.
"""

from __future__ import annotations

import importlib.util
import sys

#: module that registers the ids -> the prefixes of the ids it registers when imported
REGISTERED_ON_IMPORT: dict[str, tuple[str, ...]] = {"minigrid": ("MiniGrid-", "BabyAI-")}

#: the Python versions dmlab-gym (DeepMind Lab for gymnasium, the pip package) has wheels for
DMLAB_GYM_PYTHONS = ((3, 13), (3, 14))


def unknown_env_fix(env_name: str) -> tuple[str, str] | None:
    """(problem, fix) for the `ConfigError` of an unknown `env_name` that is a known case, or None.

    Does not import any package: the name is judged by its form and by what is installed.
    """
    for module, prefixes in REGISTERED_ON_IMPORT.items():
        if env_name.startswith(prefixes):
            installed = importlib.util.find_spec(module) is not None
            return (
                f"unknown env {env_name!r}: gymnasium knows {prefixes[0]}* ids only once the {module} "
                "package is imported" + ("." if installed else f", and {module} is not installed."),
                ("" if installed else f"pip install {module}, then ")
                + f"pass --env={module}:{env_name} (gymnasium's package.module:EnvId form: the "
                "module is imported in every process, then the id made).",
            )
    if env_name.lower().replace("-", "_").startswith("dmlab"):
        here = sys.version_info[:2]
        wheels = " and ".join(f"{a}.{b}" for a, b in DMLAB_GYM_PYTHONS)
        problem = (
            f"DMLab ({env_name!r}) is not available: surge has no DMLab env family, and dmlab-gym, the "
            f"package that provides DeepMind Lab for gymnasium, ships wheels for CPython {wheels} only"
        )
        if here not in DMLAB_GYM_PYTHONS:
            return (
                f"{problem}, while this Python is {here[0]}.{here[1]}.",
                "train on another env (a family of surge's, e.g. doom_battle for 3D navigation, or a "
                f"gymnasium id); on CPython {wheels.replace(' and ', ' or ')} with dmlab-gym installed, pass the gymnasium id it "
                "registers as --env=package.module:EnvId.",
            )
        return (
            f"{problem}.",
            "pip install dmlab-gym, then pass the gymnasium id it registers as --env=package.module:EnvId.",
        )
    return None
