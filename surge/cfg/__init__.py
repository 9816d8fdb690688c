"""Configuration: the typed `Config`, the CLI derived from it, validation, save and load."""

from surge.cfg.config import Config, EvalParams, env_frameskip, family_params, param
from surge.errors import ConfigError

__all__ = ["Config", "ConfigError", "EvalParams", "env_frameskip", "family_params", "param"]
