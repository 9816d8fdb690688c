"""Brax (JAX) envs as a batched env family: `brax_ant` steps `--env_agents` Ant envs in one jitted
call of brax's training wrappers (`brax.envs.training.wrap`: `VmapWrapper` -> `EpisodeWrapper` ->
`AutoResetWrapper`, the wrappers of brax's own PPO), so the whole batch is one `jax.jit(vmap(step))`.

Optional: `pip install "surge-rl[brax]"` (brax and jax). Making an env without them raises
`EnvError` naming the extra; the family's names are known without importing brax, so a typo is
refused when the config is parsed. See docs/brax.md.
"""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass
from typing import Any

from surge.cfg.config import Config, family_params, param
from surge.envs.brax_batched import BraxAsMultiAgent
from surge.envs.registry import register_env_family
from surge.errors import ConfigError, EnvError

#: brax 0.14's registered envs (`brax.envs._envs`), by their surge name
BRAX_ENVS = (
    "ant",
    "fast",
    "halfcheetah",
    "hopper",
    "humanoid",
    "humanoidstandup",
    "inverted_pendulum",
    "inverted_double_pendulum",
    "pusher",
    "reacher",
    "swimmer",
    "walker2d",
)

BRAX_BACKENDS = ("auto", "generalized", "positional", "spring", "mjx")

#: one batched env per worker (the whole batch is one jitted call); MLP policy with input
#: normalisation, as rl_games' configs/brax/ppo_ant.yaml
BRAX_DEFAULTS = {
    "num_envs_per_worker": 1,
    "worker_num_splits": 1,
    "env_agents": 64,
    "encoder_type": "mlp",
    "encoder_subtype": "mlp",
    "encoder_mlp_layers": [256, 128, 64],
    "nonlinearity": "elu",
    "use_rnn": False,
    "recurrence": 1,
    "with_vtrace": False,  # GAE, as rl_games' PPO
    "normalize_input": True,
}


@dataclass
class BraxParams:
    """Flags of the `brax_` family (the batch size is the core `--env_agents`)."""

    brax_backend: str = param(
        "auto",
        "Brax physics pipeline ('auto': the env's own default, 'generalized' for ant).",
        choices=BRAX_BACKENDS,
    )
    brax_episode_length: int = param(
        1000, "Env steps after which an episode is truncated (brax's EpisodeWrapper episode_length)."
    )
    brax_action_repeat: int = param(
        1, "Physics steps per env step, rewards summed (brax's EpisodeWrapper action_repeat)."
    )

    def validate(self) -> None:
        """Raises `ConfigError` for a non-positive episode length or action repeat."""
        if self.brax_episode_length < 1:
            raise ConfigError("brax_episode_length", f"{self.brax_episode_length} < 1.", "pass >= 1.")
        if self.brax_action_repeat < 1:
            raise ConfigError("brax_action_repeat", f"{self.brax_action_repeat} < 1.", "pass >= 1.")


def brax_task(full_env_name: str) -> str:
    """The brax env name of `brax_<name>` (`brax_ant` -> `ant`).

    Raises:
        ConfigError: not one of `BRAX_ENVS`, with the closest `brax_` names.
    """
    task = full_env_name[len("brax_") :]
    if task not in BRAX_ENVS:
        close = difflib.get_close_matches(task, BRAX_ENVS, n=3)
        hint = f"did you mean {', '.join('brax_' + c for c in close)}?" if close else ""
        raise ConfigError(
            "env",
            f"unknown Brax env {full_env_name!r}.",
            hint + f" Brax envs: {', '.join('brax_' + n for n in BRAX_ENVS)}.",
        )
    return task


def make_brax_env(full_env_name: str, cfg: Config, render_mode: str | None = None) -> Any:
    """A `BraxAsMultiAgent` of `cfg.env_agents` copies of the brax env, with the family's section
    (`cfg.env_params`, a `BraxParams`).

    Raises:
        EnvError: brax or jax is not installed (names the `brax` extra).
        ConfigError: unknown env name.
    """
    task = brax_task(full_env_name)
    try:
        from brax import envs  # noqa: F401
    except ImportError as e:
        raise EnvError(
            f"env {full_env_name!r} needs brax and jax, which are not installed ({e}). "
            'Fix: pip install "surge-rl[brax]" (in a checkout of surge: pip install -e ".[brax]")'
        ) from e
    p = family_params(cfg, BraxParams)
    seed = int(cfg.seed) if cfg.seed is not None else random.randrange(2**31)
    return BraxAsMultiAgent(
        task,
        int(cfg.env_agents),
        backend=None if p.brax_backend == "auto" else p.brax_backend,
        episode_length=int(p.brax_episode_length),
        action_repeat=int(p.brax_action_repeat),
        seed=seed,
    )


register_env_family(
    "brax_",
    make_brax_env,
    extra_params=BraxParams,
    default_overrides=BRAX_DEFAULTS,
    names=tuple("brax_" + n for n in BRAX_ENVS),
    batched=True,
    check_name=brax_task,
)
