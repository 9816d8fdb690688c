"""The run log's notes on the config: flags accepted without effect in this run, each with its
reason, and what an rl_games file sets that surge honours only in part. Logged once by the run,
after its log file is set up."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from surge.app.rl_games.translation import is_rl_games_yaml, translate
from surge.cfg.config import CentralValueParams, Config, flag_value
from surge.cfg.validate import ASYNC_ONLY, NO_EFFECT, PBT_ONLY
from surge.cfg.yaml_files import read_yaml
from surge.distributed.ray_checks import ray_notes
from surge.evaluation.train_eval_checks import train_eval_notes
from surge.learning.algorithm import get_algorithm
from surge.learning.run_flags import run_field_defaults
from surge.population.checks import pbt_budget_notes


def rl_games_notes(path: str) -> list[str]:
    """The keys of the rl_games file `path` (the run's `--cfg`) that have no effect here or only an
    approximate one, one line each (`surge.app.rl_games.translation.translate`); [] for no file, a file
    that is gone, or surge's own flat YAML."""
    if not path:
        return []
    if not Path(path).is_file():
        return []
    data = read_yaml(path)
    if not is_rl_games_yaml(data):
        return []
    return [f"rl_games file {path}: {n}." for n in translate(data, path).notes]


def config_notes(cfg: Config) -> list[str]:
    """Flags that are accepted but have no effect in this run, one sentence each with the reason:
    Sample Factory parameters surge does not use (`NO_EFFECT`) and, with --serial_mode=True, flags
    only the multi-process placement reads (`ASYNC_ONLY`). A flag is named only when its value
    differs from this run's default (after the env family's and the algorithm's overrides), so a
    value the family chose is not reported as the user's. The run logs these once, after its log
    file is set up; an rl_games `--cfg` file adds its own (`rl_games_notes`)."""
    notes = rl_games_notes(getattr(cfg, "cfg", ""))
    defaults = run_field_defaults(cfg)
    for name, (default, why) in NO_EFFECT.items():
        if getattr(cfg, name, default) != defaults.get(name, default):
            notes.append(f"--{name} has no effect in surge ({why}).")
    if getattr(cfg, "serial_mode", False):
        for name, why in ASYNC_ONLY.items():
            if name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect with --serial_mode=True ({why}).")
    algo = get_algorithm(cfg.algo)
    for name in algo.unused_params:
        if name in defaults and getattr(cfg, name) != defaults[name]:
            notes.append(f"--{name} has no effect with --algo={algo.name} ({algo.description}).")
    if not cfg.cuda_graphs and not getattr(cfg, "serial_mode", False) and str(cfg.device) == "cpu":
        notes.append("--cuda_graphs=False has no effect with --device=cpu (the graphs are CUDA's).")
    if not cfg.use_rnn and not getattr(cfg, "zero_rnn_on_done", True):
        notes.append("--zero_rnn_on_done=False has no effect with --use_rnn=False (no recurrent state).")
    if not str(cfg.lr_schedule).startswith("kl_adaptive"):
        for name in ("lr_schedule_kl_threshold", "lr_adaptive_min", "lr_adaptive_max"):
            if name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect without --lr_schedule=kl_adaptive_minibatch|epoch.")
    bound_loss_type = flag_value(cfg, "bound_loss_type", "bound")  # APPO's section's flags
    if bound_loss_type != defaults.get("bound_loss_type", "bound") and not flag_value(
        cfg, "bounds_loss_coef", 0.0
    ):
        notes.append("--bound_loss_type has no effect with --bounds_loss_coef=0.")
    if cfg.num_policies == 1 and cfg.policy_mapping != defaults.get("policy_mapping", "random"):
        notes.append("--policy_mapping has no effect with --num_policies=1.")
    if not cfg.with_pbt:
        for name in PBT_ONLY:
            if name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect without --with_pbt=True.")
    else:
        notes += pbt_budget_notes(cfg)
    if getattr(cfg, "self_play", False) and cfg.policy_mapping == "random":
        notes.append(
            "--self_play=True: the agents are mapped with --policy_mapping=self_play (each game pairs "
            "policy 0 with one opponent slot), not random."
        )
    if not getattr(cfg, "self_play", False):
        for name in (
            "self_play_update_score",
            "self_play_games_to_check",
            "self_play_check_scores",
            "self_play_env_update_num",
        ):
            if name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect without --self_play=True.")
    if not getattr(cfg, "central_value", False):
        for f in dataclasses.fields(CentralValueParams):
            name = f.name
            if name != "central_value" and name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect without --central_value=True.")
    notes += train_eval_notes(cfg, defaults)
    notes += ray_notes(cfg, defaults)
    return notes
