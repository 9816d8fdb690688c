"""Configuration: the typed `Config`, the CLI derived from it, validation, save and load."""

from surge.cfg.config import Config, env_frameskip, param
from surge.errors import ConfigError

__all__ = ["Config", "ConfigError", "env_frameskip", "param"]
