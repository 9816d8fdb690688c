"""The preflight: every subsystem's checks of its own flags, run once on a resolved config before
any process or env starts (`validate_cfg`). The order is the one a user meets: the config alone
first, then policies and algorithms, then the run's outputs, the machine's memory and devices."""

from __future__ import annotations

from surge.cfg.config import Config
from surge.cfg.validate import (
    check_budgets,
    check_core_fields,
    check_encoder,
    check_experiment_name,
    check_numbers,
)
from surge.distributed.ray_checks import check_ray_flags
from surge.envs.flag_checks import check_env_wrappers, check_family_section
from surge.evaluation.train_eval_checks import check_train_eval
from surge.experiment.checks import check_train_dir, check_wandb
from surge.experiment.progress import check_progress_bar
from surge.learning.algorithm import get_algorithm
from surge.learning.central_value import check_env_state
from surge.learning.checks import check_algorithm_flags, check_device
from surge.models.model_checks import check_model_flags
from surge.population.checks import check_population, check_roles
from surge.runtime.lockstep import check_deterministic
from surge.runtime.memory_estimate import check_memory, estimate_memory
from surge.runtime.ranks import check_data_parallel
from surge.sampling.checks import check_mapping_name, check_policy_mapping


def validate_cfg(cfg: Config) -> None:
    """Raises `ConfigError` naming the first invalid field and how to fix it. Accepted flags
    without effect are not errors: `surge.app.notes.config_notes` lists them for the run's log.

    Reads the file system (the experiment folder must lie inside --train_dir and, for training,
    be creatable: `check_experiment_name`, `check_train_dir`) and, only for
    `--policy_mapping=agent_index` with several policies, makes the env once to count its agents
    (`check_policy_mapping`); writes nothing."""
    check_experiment_name(cfg.train_dir, cfg.experiment)
    check_numbers(cfg)
    check_mapping_name(cfg)
    check_core_fields(cfg)
    check_roles(cfg)
    check_policy_mapping(cfg)
    check_algorithm_flags(cfg)
    check_population(cfg)
    check_train_eval(cfg)
    check_ray_flags(cfg)
    check_deterministic(cfg)
    check_progress_bar(cfg.progress_bar)
    check_wandb(cfg)
    check_family_section(cfg)
    check_encoder(cfg)
    check_model_flags(cfg)
    check_env_wrappers(cfg)
    check_memory(estimate_memory(cfg))
    check_env_state(cfg)  # makes the env once, with --central_value only
    check_device(cfg.device)
    check_budgets(cfg)
    # training writes the folder; enjoy (eval_params set) only reads it, and --no_writes (surge
    # bench) writes nothing there
    writes = not getattr(cfg, "no_writes", False) and not get_algorithm(cfg.algo).capabilities.sampler_only
    if getattr(cfg, "eval_params", None) is None and writes:
        check_train_dir(cfg.train_dir, cfg.experiment)
    if getattr(cfg, "eval_params", None) is None:  # training under torchrun with several ranks
        check_data_parallel(cfg)
