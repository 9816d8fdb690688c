"""The range checks of the policy-gradient algorithms' flags (APPO, A2C), run by their
`Algorithm.validate` only: another algorithm (DQN, SAC ...) is not subject to them. The flags
themselves stay core `Config` fields under Sample Factory's names (`--ppo_clip_ratio`, ...), so its
command lines and saved cfg.json files keep working."""

from __future__ import annotations

from typing import Any

from surge.errors import ConfigError
from surge.models.model_checks import ACTOR_CRITIC_MODEL_PARAMS

#: core flags only the policy-gradient learners read: an off-policy algorithm lists them in its
#: `Algorithm.unused_params` (the run's log then reports them when they are set)
POLICY_GRADIENT_PARAMS = (
    "gae_lambda",
    "with_vtrace",
    "vtrace_rho",
    "vtrace_c",
    "ppo_clip_ratio",
    "ppo_clip_value",
    "ppo_epochs",
    "value_loss_coeff",
    "exploration_loss",
    "exploration_loss_coeff",
    "kl_loss_coeff",
    "normalize_advantage",
    "normalize_returns",
    *ACTOR_CRITIC_MODEL_PARAMS,
)

#: coefficients where a negative value inverts what the flag is for
_NON_NEGATIVE = {
    "value_loss_coeff": "a negative coefficient trains the critic away from the returns",
    "exploration_loss_coeff": "a negative coefficient punishes exploration",
}


def check_actor_critic_flags(cfg: Any) -> None:
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


def check_ppo_flags(cfg: Any) -> None:
    """APPO's own ranges: `check_actor_critic_flags`, `ppo_epochs` >= 1, `ppo_clip_ratio` and
    `ppo_clip_value` > 0, `kl_loss_coeff` >= 0, V-trace's rho-bar > 0 and c-bar >= 0 (Espeholt et
    al. 2018, eq. 1: rho_t = min(rho-bar, pi/mu), c_i = min(c-bar, pi/mu)).

    Raises:
        ConfigError: naming the first flag out of range and how to fix it.
    """
    check_actor_critic_flags(cfg)
    v = cfg.ppo_epochs
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ConfigError(
            "ppo_epochs", f"must be a positive integer, got {v!r}.", "pass --ppo_epochs=N with N >= 1."
        )
    for name in ("ppo_clip_ratio", "ppo_clip_value"):
        if getattr(cfg, name) <= 0:
            raise ConfigError(name, f"must be > 0, got {getattr(cfg, name)}.", "")
    if cfg.kl_loss_coeff < 0:
        raise ConfigError(
            "kl_loss_coeff",
            f"must be >= 0, got {cfg.kl_loss_coeff} (a negative coefficient rewards moving away from "
            "the behaviour policy).",
            "pass --kl_loss_coeff >= 0.",
        )
    if cfg.vtrace_rho <= 0:
        raise ConfigError(
            "vtrace_rho",
            f"rho-bar truncates V-trace's importance weights from above, got {cfg.vtrace_rho}: at 0 "
            "every advantage and value correction is 0 (nothing is learned), below 0 they change sign.",
            "pass --vtrace_rho > 0, e.g. 1 (IMPALA's default).",
        )
    if cfg.vtrace_c < 0:
        raise ConfigError(
            "vtrace_c",
            f"c-bar truncates V-trace's trace coefficients from above, got {cfg.vtrace_c}: below 0 "
            "they change sign.",
            "pass --vtrace_c >= 0, e.g. 1 (IMPALA's default; 0 gives one-step targets).",
        )
