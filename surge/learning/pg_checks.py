"""The range checks of the policy-gradient algorithms' flags (APPO, A2C), run by their
`Algorithm.validate` only: another algorithm (DQN, SAC ...) is not subject to them. The flags both
share are core `Config` fields (`--gae_lambda`, `--value_loss_coeff`, ...); APPO's own (PPO's clip,
V-trace, the KL and bounds losses) are its section `surge.algorithms.appo.config.APPOParams`. All
keep Sample Factory's flat names, so its command lines and saved cfg.json files keep working."""

from __future__ import annotations

import math
from typing import Any

from surge.algorithms.appo.config import APPOParams
from surge.cfg.config import Config, algo_params, flag_value
from surge.errors import ConfigError
from surge.learning.algorithm import algorithm_names, get_algorithm
from surge.models.model_checks import ACTOR_CRITIC_MODEL_PARAMS

#: core flags only the policy-gradient learners read: an off-policy algorithm lists them in its
#: `Algorithm.unused_params` (the run's log then reports them when they are set)
POLICY_GRADIENT_PARAMS = (
    "gae_lambda",
    "ppo_epochs",
    "value_loss_coeff",
    "exploration_loss",
    "exploration_loss_coeff",
    "normalize_advantage",
    "normalize_returns",
    "value_bootstrap",
    *ACTOR_CRITIC_MODEL_PARAMS,
)


def _declaring(capability: str) -> list[str]:
    """The registered algorithms whose `Capabilities` have `capability` set."""
    return [n for n in algorithm_names() if getattr(get_algorithm(n).capabilities, capability)]


#: coefficients where a negative value inverts what the flag is for
_NON_NEGATIVE = {
    "value_loss_coeff": "a negative coefficient trains the critic away from the returns",
    "exploration_loss_coeff": "a negative coefficient punishes exploration",
}


def check_actor_critic_flags(cfg: Config) -> None:
    """The flags APPO and A2C share: `gae_lambda` in [0, 1], the critic and exploration loss
    coefficients >= 0.

    Raises:
        ConfigError: naming the first flag out of range and how to fix it.
    """
    if not 0.0 <= cfg.gae_lambda <= 1.0:
        raise ConfigError(
            "gae_lambda", f"must be in [0, 1], got {cfg.gae_lambda}.", "e.g. --gae_lambda=0.95."
        )
    for name, why in _NON_NEGATIVE.items():
        v = getattr(cfg, name)
        if v < 0:
            raise ConfigError(name, f"must be >= 0, got {v} ({why}).", f"pass --{name} >= 0.")


def check_ppo_flags(cfg: Config) -> None:
    """APPO's own ranges: `check_actor_critic_flags`, `ppo_epochs` >= 1, and its section's
    (`APPOParams`) strict ones: `ppo_clip_ratio` and `ppo_clip_value` > 0, V-trace's rho-bar > 0
    (Espeholt et al. 2018, eq. 1: rho_t = min(rho-bar, pi/mu)), `bounds_loss_coef` finite and >= 0.
    The section's ranges declared on its fields (`kl_loss_coeff`, `vtrace_c` >= 0) are checked from
    their definitions (`surge.learning.checks.check_algorithm_flags`).

    Raises:
        ConfigError: naming the first flag out of range and how to fix it.
    """
    check_actor_critic_flags(cfg)
    v = cfg.ppo_epochs
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ConfigError(
            "ppo_epochs", f"must be a positive integer, got {v!r}.", "pass --ppo_epochs=N with N >= 1."
        )
    appo = algo_params(cfg, APPOParams)
    for name in ("ppo_clip_ratio", "ppo_clip_value"):
        if getattr(appo, name) <= 0:
            raise ConfigError(name, f"must be > 0, got {getattr(appo, name)}.", "")
    if appo.vtrace_rho <= 0:
        raise ConfigError(
            "vtrace_rho",
            f"rho-bar truncates V-trace's importance weights from above, got {appo.vtrace_rho}: at 0 "
            "every advantage and value correction is 0 (nothing is learned), below 0 they change sign.",
            "pass --vtrace_rho > 0, e.g. 1 (IMPALA's default).",
        )
    if not (math.isfinite(appo.bounds_loss_coef) and appo.bounds_loss_coef >= 0):
        raise ConfigError(
            "bounds_loss_coef",
            f"must be finite and >= 0, got {appo.bounds_loss_coef} (a negative one pushes the "
            "action means out of the bounds).",
            "pass --bounds_loss_coef >= 0 (0: off; rl_games' files use 0.0001).",
        )


def check_rl_games_options(cfg: Config) -> None:
    """rl_games' PPO options (docs/ppo_options.md), for every algorithm: the KL-adaptive schedule's
    threshold > 0 and 0 < lr_adaptive_min <= lr_adaptive_max, and only with an algorithm that
    measures the KL (`Capabilities.kl_adaptive_rate`); `reward_shift` and
    `score_to_win` finite; `rescale_actions` only for an algorithm declaring
    `Capabilities.rescale_actions`, `zero_rnn_on_done=False` (with an RNN) only for one declaring
    `Capabilities.carry_rnn_over_done`.

    Raises:
        ConfigError: naming the first flag out of range or unsupported and how to fix it.
    """
    adaptive = str(cfg.lr_schedule).startswith("kl_adaptive")
    can = get_algorithm(cfg.algo).capabilities
    if adaptive and not can.kl_adaptive_rate:
        raise ConfigError(
            "lr_schedule",
            f"{cfg.lr_schedule} adapts the rate to the KL between the behavior and the current "
            f"policy, which only {', '.join(_declaring('kl_adaptive_rate'))} measures (--algo={cfg.algo}).",
            "pass --lr_schedule=constant or linear_decay, or --algo=APPO.",
        )
    if not (math.isfinite(cfg.lr_schedule_kl_threshold) and cfg.lr_schedule_kl_threshold > 0):
        raise ConfigError(
            "lr_schedule_kl_threshold",
            f"must be a finite KL > 0, got {cfg.lr_schedule_kl_threshold}.",
            "e.g. --lr_schedule_kl_threshold=0.008 (rl_games' kl_threshold).",
        )
    lo, hi = cfg.lr_adaptive_min, cfg.lr_adaptive_max
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
        raise ConfigError(
            "lr_adaptive_min",
            f"needs 0 < lr_adaptive_min <= lr_adaptive_max, both finite, got {lo} and {hi}.",
            "e.g. --lr_adaptive_min=1e-6 --lr_adaptive_max=1e-2 (rl_games' bounds).",
        )
    if not math.isfinite(cfg.reward_shift):
        raise ConfigError(
            "reward_shift", f"must be finite, got {cfg.reward_shift}.", "e.g. --reward_shift=0."
        )
    if cfg.score_to_win is not None and not math.isfinite(cfg.score_to_win):
        raise ConfigError(
            "score_to_win",
            f"must be a finite return, got {cfg.score_to_win}.",
            "pass a return, or leave it unset (None: never stop on the score).",
        )
    if cfg.rescale_actions and not can.rescale_actions:
        raise ConfigError(
            "rescale_actions",
            f"--algo={cfg.algo} acts in the action space's own bounds already.",
            "leave --rescale_actions=False.",
        )
    if not cfg.zero_rnn_on_done and cfg.use_rnn and not can.carry_rnn_over_done:
        raise ConfigError(
            "zero_rnn_on_done",
            f"--algo={cfg.algo}'s learner always resets the recurrent state at episode ends; "
            "acting would carry it over (the two would disagree).",
            f"leave --zero_rnn_on_done=True, or use {' or '.join(_declaring('carry_rnn_over_done'))}.",
        )


def check_action_options(cfg: Config, action_space: Any) -> None:
    """The options that need a Box action space (a Gaussian head): `bounds_loss_coef` > 0, and
    `rescale_actions` (finite bounds too). Run with the env's action space before any process
    starts (`surge.runtime.env_checks.check_env_spaces`).

    Raises:
        ConfigError: naming the flag and the fix.
    """
    import gymnasium as gym
    import numpy as np

    is_box = isinstance(action_space, gym.spaces.Box)
    # APPO's flag (`APPOParams`): read by name, any algorithm's section may have it
    if flag_value(cfg, "bounds_loss_coef", 0.0) > 0 and not is_box:
        raise ConfigError(
            "bounds_loss_coef",
            f"the bounds loss penalises a Gaussian policy's mean; the env's actions are {action_space}.",
            "pass --bounds_loss_coef=0 for discrete actions.",
        )
    if getattr(cfg, "rescale_actions", False):
        if not is_box:
            raise ConfigError(
                "rescale_actions",
                f"maps continuous actions; the env's are {action_space}.",
                "leave it False.",
            )
        if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
            raise ConfigError(
                "rescale_actions",
                f"maps [-1, 1] onto the action bounds, which are not finite ({action_space}).",
                "leave it False.",
            )
