"""Configuration: the typed `Config`, the CLI derived from it, validation, save and load."""

from surge.cfg.config import Config, EvalParams, algo_params, env_frameskip, family_params, param
from surge.errors import ConfigError

__all__ = ["Config", "ConfigError", "EvalParams", "algo_params", "env_frameskip", "family_params", "param"]
