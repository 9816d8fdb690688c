"""`run_config`: runs a resolved config to its end, the one call `surge train` (`surge.train`)
and the Python API's `surge.train(...)` (`surge.api`) both make. It imports the engine (torch)
only when a run starts, so `import surge.train` and `--help` stay light."""

from __future__ import annotations

from typing import Any

from surge.cfg.config import Config


def sampler_only(cfg: Config) -> bool:
    """Whether `--algo` declares `Capabilities.sampler_only` (DUMMY_SAMPLER: `surge bench`)."""
    # imported here for the reason `surge.train.main` imports parse_cfg there: the registry's
    # declarations import torch
    from surge.learning.algorithm import get_algorithm

    return get_algorithm(cfg.algo).capabilities.sampler_only


def run_config(cfg: Config) -> tuple[Any, str]:
    """Runs the parsed config `cfg` (a `Config`) to its end; returns its `TrainingRun` and final
    status ("done", "interrupted", "already_done" or "failed": `TrainingRun`'s doc). With
    `--algo=DUMMY_SAMPLER`, samples random actions with no learning and no checkpoints, at most
    `--sample_env_frames` env frames. `surge train` and `surge.train(...)` both run through here."""
    # the engine (torch) when a run starts: `import surge.train` and `--help` stay light
    from surge.app.training_run import TrainingRun

    if sampler_only(cfg):  # random actions through the same sampling machinery, no learning
        cfg.sampler_only, cfg.no_writes = True, True
        # the lower budget of the two (the run's log says which)
        cfg.train_for_env_steps = min(cfg.train_for_env_steps, cfg.sample_env_frames)
    run = TrainingRun(cfg)
    return run, run.run()
