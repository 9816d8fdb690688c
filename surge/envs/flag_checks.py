"""The env subsystem's checks of its flags, run by the preflight (`surge.app.preflight.validate_cfg`):
the env family's own section and `--env_wrappers`."""

from __future__ import annotations

from surge.cfg.config import Config
from surge.envs.registry import resolve_wrapper


def check_family_section(cfg: Config) -> None:
    """The env family's own ranges (`EnvFamily.extra_params`, the section `cfg.env_params`, when it
    has a `validate` method; ConfigError from it)."""
    check_family = getattr(cfg.env_params, "validate", None)
    if callable(check_family):
        check_family()


def check_env_wrappers(cfg: Config) -> None:
    """Every `--env_wrappers` entry names an importable wrapper (ConfigError otherwise)."""
    for name in getattr(cfg, "env_wrappers", None) or []:
        resolve_wrapper(name)
