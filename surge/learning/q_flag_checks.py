"""Flags of the Q-learning algorithms (DQN, R2D2) that another flag makes idle, refused rather than
parsed and ignored ("every flag acts, is refused, or is reported"): the linear epsilon schedule's
flags with `--per_actor_eps=True`, the per-actor epsilon's with `--per_actor_eps=False`, and
`--value_rescale_eps` with `--value_rescale=False`, and DQN's `--priority_clip` where no priority is
clipped.

A flag counts as set when its value differs from this run's default (after the env family's and
the algorithm's overrides), as `surge.app.notes.config_notes` decides it: a flag passed with
its default value is indistinguishable from one left out, and acts the same.
"""

from __future__ import annotations

from typing import Any

from surge.cfg.config import Config
from surge.errors import ConfigError
from surge.learning.run_flags import run_field_defaults

#: the linear schedule's flags (read only with --per_actor_eps=False)
SCHEDULE_FLAGS = ("exploration_initial_eps", "exploration_final_eps", "exploration_fraction")
#: Ape-X's per-actor epsilon's flags (read only with --per_actor_eps=True)
PER_ACTOR_FLAGS = ("per_actor_eps_base", "per_actor_eps_alpha")


def _run_defaults(cfg: Config) -> dict[str, Any]:
    return run_field_defaults(cfg)


def _set_flags(cfg: Config, params: Any, names: tuple[str, ...]) -> list[str]:
    defaults = _run_defaults(cfg)
    return [n for n in names if n in defaults and getattr(params, n) != defaults[n]]


def refuse_idle_exploration_flags(cfg: Config, params: Any, algo: str) -> None:
    """Raises `ConfigError` naming the first set flag of the epsilon rule that `--per_actor_eps`
    does not use. `params`: the algorithm's section (with the `SCHEDULE_FLAGS`, `PER_ACTOR_FLAGS`
    and `per_actor_eps` fields)."""
    if params.per_actor_eps:
        idle = _set_flags(cfg, params, SCHEDULE_FLAGS)
        if idle:
            raise ConfigError(
                idle[0],
                f"has no effect with --per_actor_eps=True: --algo={algo}'s actors then use Ape-X's "
                "per-actor epsilon (--per_actor_eps_base, --per_actor_eps_alpha), not the linear "
                "schedule.",
                f"leave --{idle[0]} out, or pass --per_actor_eps=False to act with the schedule.",
            )
    else:
        idle = _set_flags(cfg, params, PER_ACTOR_FLAGS)
        if idle:
            raise ConfigError(
                idle[0],
                f"has no effect with --per_actor_eps=False: --algo={algo}'s actors then follow the "
                "linear schedule (--exploration_initial_eps, --exploration_final_eps, "
                "--exploration_fraction).",
                f"leave --{idle[0]} out, or pass --per_actor_eps=True to use it.",
            )


def refuse_idle_value_rescale_eps(cfg: Config, params: Any) -> None:
    """Raises `ConfigError` for `--value_rescale_eps` set with `--value_rescale=False` (the
    targets are then not rescaled, and the epsilon of h(x) is read nowhere)."""
    if not params.value_rescale and _set_flags(cfg, params, ("value_rescale_eps",)):
        raise ConfigError(
            "value_rescale_eps",
            "has no effect with --value_rescale=False (the n-step targets are not rescaled).",
            "leave --value_rescale_eps out, or pass --value_rescale=True.",
        )


def refuse_idle_priority_clip(cfg: Config, params: Any, algo: str) -> None:
    """Raises `ConfigError` when `--priority_clip` is set but no priority is clipped: without
    `--prioritized_replay`, with `--categorical` (whose priorities are KL divergences) or with
    `--dqn_loss=mse`."""
    if not _set_flags(cfg, params, ("priority_clip",)):
        return
    if not params.prioritized_replay:
        raise ConfigError(
            "priority_clip",
            f"has no effect with --prioritized_replay=False: --algo={algo} then replays uniformly.",
            "leave --priority_clip out, or pass --prioritized_replay=True.",
        )
    if params.categorical:
        raise ConfigError(
            "priority_clip",
            "has no effect with --categorical=True: C51's priorities are KL divergences, not TD errors.",
            "leave --priority_clip out.",
        )
    if params.dqn_loss != "huber":
        raise ConfigError(
            "priority_clip",
            f"has no effect with --dqn_loss={params.dqn_loss}: priorities are clipped with the Huber "
            "loss only, whose gradient is clipped at the same point (rlpyt's delta_clip).",
            "leave --priority_clip out, or pass --dqn_loss=huber.",
        )
