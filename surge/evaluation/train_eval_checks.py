"""Checks of the "evaluation during training" flags (`TrainEvalParams`), run by `validate_cfg`
before any process starts, and the notes on those flags that have no effect in a run
(`config_notes`)."""

from __future__ import annotations

import math
from typing import Any

from surge.cfg.config import Config
from surge.envs.registry import check_env_name, find_family, same_family
from surge.errors import ConfigError
from surge.learning.algorithm import get_algorithm


def check_train_eval(cfg: Config) -> None:
    """Refuses evaluation flags that cannot work. Skipped for `surge enjoy` (a config with
    `eval_params`), which reads these fields from a trained run's cfg.json but does not train.

    Raises:
        ConfigError: `eval_every_env_frames` < 0; `eval_episodes` or `eval_num_envs` < 1 with
            evaluation on;
            `save_best_by_eval` or `eval_score_to_win` without evaluation; `eval_score_to_win`
            not a finite number; an `eval_env` unknown or of another family
            than `env`; `eval_stat` named return or length; evaluation with an algorithm that has no
            learner (DUMMY_SAMPLER), with `--sampler_only` or with `--no_writes` (`surge bench`).
    """
    if getattr(cfg, "eval_params", None) is not None:
        return
    every = _int_at_least(
        cfg,
        "eval_every_env_frames",
        0,
        "must be an integer >= 0 (0: no evaluation), got {!r}.",
        "pass --eval_every_env_frames=N, e.g. 100000, or 0 to turn evaluation off.",
    )
    if every and cfg.eval_env:
        _check_eval_env(cfg)
    if every and cfg.eval_stat in ("return", "length"):
        raise ConfigError(
            "eval_stat",
            f"{cfg.eval_stat!r} would be written as eval/{cfg.eval_stat}_mean, over the evaluation's own "
            f"{cfg.eval_stat} curve.",
            "leave --eval_stat out: every evaluation reports the return and the length already.",
        )
    win = cfg.eval_score_to_win
    if win is not None and (
        isinstance(win, bool) or not isinstance(win, (int, float)) or not math.isfinite(win)
    ):
        raise ConfigError(
            "eval_score_to_win",
            f"must be a finite number (a mean eval return), got {win!r}.",
            "pass --eval_score_to_win=X, e.g. 475 for CartPole-v1, or leave it out (never stop on it).",
        )
    if every == 0:
        if win is not None:
            raise ConfigError(
                "eval_score_to_win",
                "the run cannot stop on an eval return: evaluation is off (--eval_every_env_frames=0).",
                "pass --eval_every_env_frames=N (e.g. 10000) too, or use --score_to_win (training returns).",
            )
        if cfg.save_best_by_eval:
            raise ConfigError(
                "save_best_by_eval",
                "the best checkpoint cannot be chosen by eval return: evaluation is off "
                "(--eval_every_env_frames=0).",
                "pass --eval_every_env_frames=N (e.g. 100000) too, or --save_best_by_eval=False.",
            )
        return
    _int_at_least(
        cfg,
        "eval_episodes",
        1,
        "must be at least 1, got {!r}: an evaluation would play no episode.",
        "pass --eval_episodes=N with N >= 1 (default 10).",
    )
    _int_at_least(
        cfg,
        "eval_num_envs",
        1,
        "must be at least 1, got {!r}: an evaluation would have no env to play.",
        "pass --eval_num_envs=N with N >= 1 (default 8; 1 plays one env at a time).",
    )
    algo = get_algorithm(cfg.algo)
    if not algo.trains:
        raise ConfigError(
            "eval_every_env_frames",
            f"--algo={cfg.algo} has no learner: there are no trained weights to evaluate.",
            "pass --eval_every_env_frames=0, or train with a learning algorithm (e.g. --algo=APPO).",
        )
    if cfg.sampler_only:
        raise ConfigError(
            "eval_every_env_frames",
            "--sampler_only=True does not train: there are no trained weights to evaluate.",
            "pass --eval_every_env_frames=0, or --sampler_only=False.",
        )
    if getattr(cfg, "distributed", "none") == "ray":
        raise ConfigError(
            "eval_every_env_frames",
            "evaluation during training is not built for --distributed=ray (the evaluator process "
            "reads the weights from the one-machine placement's shared memory).",
            "pass --eval_every_env_frames=0 with --distributed=ray, and evaluate the checkpoints "
            "with `surge enjoy --no_render`.",
        )
    if cfg.no_writes:
        raise ConfigError(
            "eval_every_env_frames",
            "--no_writes=True (surge bench, surge tune) measures throughput and writes no "
            "summaries: an evaluation would compete with the sampler for the CPU and report nowhere.",
            "pass --eval_every_env_frames=0 to measure, or --no_writes=False to train with evaluation.",
        )


def _check_eval_env(cfg: Config) -> None:
    """Refuses an `--eval_env` of another env family than `--env` (its family would read other
    flags; the spaces are compared once the eval env is made, `EpisodePlayer`)."""
    try:
        theirs = check_env_name(cfg.eval_env)
    except ConfigError as e:  # the same checks as --env's, under this flag's name
        raise ConfigError("eval_env", e.problem, e.fix) from None
    ours = find_family(cfg.env)
    if not same_family(ours, theirs):
        family = theirs.prefix or "gymnasium ids"
        raise ConfigError(
            "eval_env",
            f"{cfg.eval_env!r} is of the env family {family!r}, the training env {cfg.env!r} of "
            f"{ours.prefix or 'gymnasium ids'!r}: an eval env must be of the training env's family "
            "(its flags and spaces).",
            "pass an --eval_env of the same family (e.g. --env=doom_duel --eval_env=doom_duel_bots), or leave it out.",
        )


def _int_at_least(cfg: Config, name: str, minimum: int, problem: str, fix: str) -> int:
    """`cfg.<name>`, an int (not a bool) >= `minimum`; else ConfigError naming the field, with
    `problem` formatted with the value."""
    value = getattr(cfg, name)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(name, problem.format(value), fix)
    return value


def train_eval_notes(cfg: Config, defaults: dict[str, Any]) -> list[str]:
    """The evaluation flags set away from their `defaults` without an effect in this run: with
    evaluation off, `--eval_episodes` (and `--eval_deterministic`, which is then only saved as
    `surge enjoy`'s default); with an algorithm whose evaluation always acts deterministically (its
    `Algorithm.eval_act`: DQN's greedy action, SAC/TD3/DDPG's mean), `--eval_deterministic`."""
    notes = []
    if not cfg.eval_every_env_frames:
        if "eval_episodes" in defaults and cfg.eval_episodes != defaults["eval_episodes"]:
            notes.append(
                "--eval_episodes has no effect with --eval_every_env_frames=0 (no evaluation during training)."
            )
        notes += [
            f"--{name} has no effect with --eval_every_env_frames=0 (no evaluation during training)."
            for name in ("eval_env", "eval_stat", "eval_num_envs")
            if name in defaults and getattr(cfg, name) != defaults[name]
        ]
        if "eval_deterministic" in defaults and cfg.eval_deterministic != defaults["eval_deterministic"]:
            notes.append(
                "--eval_deterministic is not used in training with --eval_every_env_frames=0; it is "
                "saved in cfg.json as `surge enjoy`'s default."
            )
        return notes
    if cfg.save_best_by_eval:
        notes += [
            f"--{name} has no effect with --save_best_by_eval=True: every evaluation that beats the "
            "best eval return so far writes the best checkpoint."
            for name in ("save_best_after", "save_best_every_sec")
            if name in defaults and getattr(cfg, name) != defaults[name]
        ]
    if get_algorithm(cfg.algo).eval_act is not None and not cfg.eval_deterministic:
        notes.append(
            f"--eval_deterministic=False has no effect with --algo={cfg.algo}: its evaluation always "
            "takes the deterministic action (greedy / the mean)."
        )
    return notes
