"""EnvPool Atari as a batched env family: `envpool_breakout` steps `--env_agents` Breakout games in
EnvPool's C++ thread pool, with the same preprocessing as the `atari_` family (noop reset,
frameskip 4 with max-pool, 84x84 grayscale, 4-frame stack, episodic life, fire reset, sign clipping,
repeat_action_probability 0 as in NoFrameskip-v4)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from surge.cfg.config import Config, family_params, param
from surge.envs.atari import ATARI_DEFAULTS, atari_env_id, check_atari_params
from surge.envs.batched import EnvPoolAsMultiAgent
from surge.envs.registry import register_env_family
from surge.errors import ConfigError, EnvError


@dataclass
class EnvPoolParams:
    """Flags of the `envpool_` family (the batch size is the core `--env_agents`)."""

    envpool_num_threads: int = param(1, "EnvPool's own C++ threads per batched env (0: EnvPool's default).")
    env_frameskip: int = param(4, "Emulator frames per env step (max-pooled over the last two).")
    env_framestack: int = param(4, "Stacked frames per observation.")
    atari_episodic_life: bool = param(True, "A lost life ends the training episode (not the game).")
    atari_clip_reward: bool = param(True, "Rewards become their sign (statistics stay in game score).")
    atari_noop_max: int = param(30, "Up to this many no-op actions after each reset.")
    atari_max_episode_frames: int = param(108000, "Games are truncated after this many emulator frames.")

    def validate(self) -> None:
        """Raises `ConfigError` for a flag out of range (the Atari family's checks)."""
        check_atari_params(self)


#: as the atari_ family, with one batched env per split
ENVPOOL_DEFAULTS = {**ATARI_DEFAULTS, "num_envs_per_worker": 1, "worker_num_splits": 1}


def check_envpool_name(full_env_name: str) -> None:
    """Refuses `envpool_<game>` when `<game>` is not an Atari game (as `atari_<game>` would be).

    Raises:
        ConfigError: unknown game, with the closest `envpool_` names.
        EnvError: ale-py, which lists the games, is not installed.
    """
    try:
        atari_env_id("atari_" + full_env_name[len("envpool_") :])
    except ConfigError as e:
        raise ConfigError(
            "env",
            f"unknown EnvPool Atari game {full_env_name!r}.",
            e.fix.replace("atari_", "envpool_"),  # the same games, under this family's prefix
        ) from None


def _task_id(full_env_name: str) -> str:
    import envpool

    gym_id = atari_env_id("atari_" + full_env_name[len("envpool_") :])  # e.g. BreakoutNoFrameskip-v4
    task = gym_id.split("NoFrameskip")[0].split("/")[-1].split("-")[0] + "-v5"
    if task not in envpool.list_all_envs():
        raise ConfigError("env", f"EnvPool has no Atari task {task!r}.", "use an atari_ env instead.")
    return task


def pool_maker(family: str, task: str, cfg: Config, num_threads: int, **task_kwargs: Any) -> tuple[Any, int]:
    """`make(seed)`, making an EnvPool pool of `cfg.env_agents` envs of `task` (gymnasium API, every
    env in each batch) with the task's own keyword arguments, and the seed of the first pool
    (`--seed`, else a random one; a pool's `reset(seed)` reseeds it).

    Raises:
        EnvError: envpool is not installed (naming `family`).
    """
    try:
        import envpool
    except ImportError as e:
        raise EnvError(f"the {family} family needs EnvPool: pip install envpool") from e
    n = int(cfg.env_agents)

    def make(seed: int) -> Any:
        return envpool.make(
            task,
            env_type="gymnasium",
            num_envs=n,
            batch_size=n,
            num_threads=num_threads,
            seed=seed,
            **task_kwargs,
        )

    return make, int(cfg.seed) if cfg.seed is not None else random.randrange(2**31)


def make_envpool_env(full_env_name: str, cfg: Config, render_mode: str | None = None) -> EnvPoolAsMultiAgent:
    """An `EnvPoolAsMultiAgent` of `cfg.env_agents` Atari games, with the family's section
    (`cfg.env_params`, an `EnvPoolParams`).

    Raises:
        EnvError: envpool is not installed.
        ConfigError: `cfg` is not of the envpool_ family.
    """
    p = family_params(cfg, EnvPoolParams)
    skip = int(p.env_frameskip)
    make, first_seed = pool_maker(
        "envpool_",
        _task_id(full_env_name),
        cfg,
        int(p.envpool_num_threads),
        episodic_life=bool(p.atari_episodic_life),
        reward_clip=bool(p.atari_clip_reward),
        noop_max=int(p.atari_noop_max),
        frame_skip=skip,
        stack_num=int(p.env_framestack),
        img_height=84,
        img_width=84,
        gray_scale=True,
        repeat_action_probability=0.0,
        use_fire_reset=True,
        max_episode_steps=int(p.atari_max_episode_frames) // skip,
    )
    return EnvPoolAsMultiAgent(make(first_seed), remake=make)


register_env_family(
    "envpool_",
    make_envpool_env,
    extra_params=EnvPoolParams,
    default_overrides=ENVPOOL_DEFAULTS,
    batched=True,
    preload=("envpool",),
    eval_env_name=lambda name: "atari_" + name[len("envpool_") :],  # enjoy plays the same game through ale-py
    check_name=check_envpool_name,
)
