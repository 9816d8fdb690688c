"""Atari 2600 games (ALE) as the `atari_` env family: `--env=atari_breakout`, `--env=atari_pong`...

A name is `atari_` + the game's ALE ROM name in snake_case (`ale_py.roms.get_all_rom_ids()`:
`atari_space_invaders`, `atari_montezuma_revenge`), the same with the underscores dropped, as in
Sample Factory (`atari_spaceinvaders`), or an alias of `ATARI_ALIASES` (`atari_montezuma`). It
maps to the gymnasium id `<CamelCase>NoFrameskip-v4` (no sticky actions, no built-in frameskip);
the few ROMs that have no v4 id use `ALE/<CamelCase>-v5` made with `frameskip=1` and
`repeat_action_probability=0.0`, i.e. the same emulator settings.

Wrapper stack (innermost first), the standard DQN/PPO Atari preprocessing (Mnih et al. 2015,
Machado et al. 2018, as in SB3 / CleanRL):

1. `gym.make(id, max_episode_steps=atari_max_episode_frames, obs_type="ram")`: truncation in
   emulator frames. The ALE env's own observation is never read (the next wrapper takes its frames
   from the emulator itself), but ALE makes one on every emulator frame, so it is the cheapest,
   the 128 bytes of RAM (`BASE_OBS_TYPE`; `render_mode="rgb_array"` still renders RGB), behind
   `ScreenSpace`, which gives the next wrapper the screen's shape to size its buffers from.
2. `gymnasium.wrappers.AtariPreprocessing`: 1..`atari_noop_max` random no-ops on reset,
   `env_frameskip` repeated frames per step with a max-pool over the last two, 84x84 grayscale uint8.
3. `gymnasium.wrappers.RecordEpisodeStatistics`: `info["episode"] = {"r", "l", "t"}` at the end of
   each whole game, in unclipped score (below the episodic-life and reward-clipping wrappers).
   In gymnasium 1.4 these are Python scalars: `r` float (game score), `l` int (env steps, i.e.
   agent steps, including the hidden no-op / FIRE steps taken inside `reset()`), `t` float
   (seconds). surge's `SingleAgentAsMultiAgent` sees it in the chain and adds no second one.
4. `surge.envs.wrappers.EpisodicLifeEnv` (only when `atari_episodic_life`: training; evaluation
   passes a config with it False): a lost life is `terminated=True`, the game goes on.
5. `surge.envs.wrappers.FireResetEnv` for games with a FIRE action: FIRE after each reset, and in
   evaluation (no episodic life) after each lost life, as each life began in training.
6. `gymnasium.wrappers.TransformReward(sign)` when `atari_clip_reward`: rewards in {-1, 0, +1}.
   (`gymnasium.wrappers.ClipReward(-1, 1)` clips instead of taking the sign; for Atari's
   integer rewards both are the same, sign is the DQN convention.)
7. `gymnasium.wrappers.FrameStackObservation(env_framestack)`: obs `(env_framestack, 84, 84)` uint8,
   channels first, the reset frame repeated to fill the stack after a reset.

ale-py is an optional dependency (`pip install surge-rl[atari]`); without it the family is still
registered and making an env raises `EnvError` saying what to install.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import (
    AtariPreprocessing,
    FrameStackObservation,
    RecordEpisodeStatistics,
    TransformReward,
)

from surge.cfg.config import Config, family_params, param
from surge.envs.registry import register_env_family
from surge.envs.wrappers import EpisodicLifeEnv, FireResetEnv, needs_fire_reset, sign_reward
from surge.errors import ConfigError, EnvError

try:
    import ale_py
except ImportError:  # optional dependency
    ale_py = None  # type: ignore[assignment]  # callers check for None: the module is optional

ATARI_PREFIX = "atari_"
ATARI_SCREEN_SIZE = 84
#: the ALE env's own observation type under `AtariPreprocessing`, which reads its frames from the
#: emulator (`ale.getScreenGrayscale`) and never this observation: ALE makes it on every emulator
#: frame all the same (in RGB, ALE's default, 21.6% of a Pong step's samples; in grayscale 12%;
#: docs/logs/benchmarks_2026-12-04.md), so surge asks for the 128 bytes of RAM. The observations
#: are the same whichever it is (`benchmarks/atari_obs_type_ab.py` times the three).
BASE_OBS_TYPE = "ram"

#: extra short names -> the ROM name (snake_case) they stand for (Sample Factory's names included)
ATARI_ALIASES = {
    "montezuma": "montezuma_revenge",
    "montezumas_revenge": "montezuma_revenge",
    "james_bond": "jamesbond",
    "kungfu": "kung_fu_master",
    "river_raid": "riverraid",
    "tictactoe": "tic_tac_toe_3d",
    "pitfall_2": "pitfall2",
}


@dataclass
class AtariParams:
    """Config fields the Atari family adds (`--env_frameskip=4` ...)."""

    env_frameskip: int = param(
        4, "Emulator frames per env step (the action is repeated; max-pool of the last 2)."
    )
    env_framestack: int = param(4, "Most recent 84x84 frames stacked into one observation (channels).")
    atari_episodic_life: bool = param(
        True, "Training: losing a life ends the episode (the game goes on). Evaluation turns it off."
    )
    atari_clip_reward: bool = param(
        True, "Rewards become their sign in {-1, 0, +1} (stats stay in game score)."
    )
    atari_noop_max: int = param(30, "Up to this many random no-op actions after each reset (0: none).")
    atari_max_episode_frames: int = param(
        108000,
        "Games are truncated after this many emulator frames (108000 = 30 min, 27000 steps at "
        "frameskip 4; 0: no limit).",
    )
    atari_full_action_space: bool = param(False, "Use all 18 ALE actions instead of the game's minimal set.")

    def validate(self) -> None:
        """Raises `ConfigError` for a flag out of range (`check_atari_params`)."""
        check_atari_params(self)


#: Family defaults for Atari. They follow Sample Factory 2's Atari example (sf_examples/atari), whose
#: parameters were chosen to match CleanRL's ppo_atari.py: Nature CNN, no RNN, GAE, 128-step rollouts,
#: 4 epochs over 4 minibatches of 256, clip 0.1, lr 2.5e-4, entropy 0.01, grad norm 0.5. Unlike SF's
#: example, and like CleanRL, they normalise neither input nor returns and keep Adam's eps at 1e-6 (SF:
#: normalize_input, normalize_returns, adam_eps=1e-5); SF's example also learns synchronously
#: (async_rl=False), surge asynchronously. benchmarks/configs.py spells SF's settings out for surge.
ATARI_DEFAULTS: dict[str, Any] = {
    "encoder_type": "conv",
    "encoder_subtype": "convnet_deepmind",
    "obs_scale": 255.0,
    "hidden_size": 512,
    "nonlinearity": "relu",
    "use_rnn": False,
    "rollout": 128,
    "recurrence": 1,
    "batch_size": 256,
    "num_batches_per_iteration": 4,
    "ppo_epochs": 4,
    "ppo_clip_ratio": 0.1,
    "ppo_clip_value": 1.0,
    "learning_rate": 2.5e-4,
    "exploration_loss_coeff": 0.01,
    "with_vtrace": False,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "max_grad_norm": 0.5,
    "num_envs_per_worker": 4,  # x 2 workers = 8 envs, as CleanRL's PPO Atari
    "worker_num_splits": 1,
    "lr_schedule": "linear_decay",
    "value_loss_coeff": 0.5,
}


def _build_game_table() -> dict[str, str]:
    """Short game name (without `atari_`) -> gymnasium id, for every ROM ale-py ships."""
    if ale_py is None:
        return {}
    gym.register_envs(ale_py)
    v4, v5 = {}, {}
    for env_id in gym.registry:
        if env_id.endswith("NoFrameskip-v4") and "-ram" not in env_id:
            v4[env_id[: -len("NoFrameskip-v4")].lower()] = env_id
        elif env_id.startswith("ALE/") and env_id.endswith("-v5") and "-ram" not in env_id:
            v5[env_id[len("ALE/") : -len("-v5")].lower()] = env_id
    table: dict[str, str] = {}
    for rom in ale_py.roms.get_all_rom_ids():
        key = rom.replace("_", "").lower()
        found = v4.get(key) or v5.get(key)
        if found is None:
            continue
        table[rom] = found
        table.setdefault(rom.replace("_", ""), found)
    for alias, rom in ATARI_ALIASES.items():
        if rom in table:
            table.setdefault(alias, table[rom])
    return table


#: short game name (`breakout`, `space_invaders`, `spaceinvaders`, `montezuma`) -> gymnasium id
ATARI_GAMES: dict[str, str] = _build_game_table()


def atari_env_id(env_name: str) -> str:
    """The gymnasium id of an Atari env name: `atari_breakout` -> `BreakoutNoFrameskip-v4`.

    Raises:
        EnvError: if ale-py is not installed.
        ConfigError: if the name is not an Atari game; the message lists the closest names.
    """
    if ale_py is None:
        raise EnvError(
            f"env {env_name!r} needs the Atari emulator, but ale-py is not installed. "
            "Fix: pip install 'surge-rl[atari]' (ale-py and opencv-python-headless)."
        )
    game = env_name[len(ATARI_PREFIX) :] if env_name.startswith(ATARI_PREFIX) else env_name
    if game in ATARI_GAMES:
        return ATARI_GAMES[game]
    close = difflib.get_close_matches(game.lower(), list(ATARI_GAMES), n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(ATARI_PREFIX + c for c in close)}? " if close else ""
    raise ConfigError(
        "env",
        f"unknown Atari game {env_name!r}.",
        f"{hint}Atari names are atari_ + an ALE ROM name in snake_case, e.g. atari_breakout, "
        "atari_space_invaders (list: ale_py.roms.get_all_rom_ids()).",
    )


def check_atari_params(p: Any) -> None:
    """Ranges of the Atari flags (of `AtariParams` or `EnvPoolParams`), checked by `validate_cfg`
    before any process starts.

    Raises:
        ConfigError: `env_frameskip` or `env_framestack` is < 1, `env_frameskip` is over
            `atari_max_episode_frames` (when that limit is on), or `atari_noop_max` < 0.
    """
    for name in ("env_frameskip", "env_framestack"):
        if int(getattr(p, name)) < 1:
            raise ConfigError(
                name, f"must be >= 1, got {getattr(p, name)}.", f"pass --{name}=4 (the usual value)."
            )
    # one step longer than a whole game: every episode would be a single step, and the emulator
    # would run a whole game's frames per step (a run of a few hundred steps takes hours)
    max_frames = int(p.atari_max_episode_frames)
    if max_frames > 0 and int(p.env_frameskip) > max_frames:
        raise ConfigError(
            "env_frameskip",
            f"{p.env_frameskip} frames per step is more than a whole game holds "
            f"(--atari_max_episode_frames={max_frames}).",
            "pass --env_frameskip=4 (the usual value).",
        )
    if int(p.atari_noop_max) < 0:
        raise ConfigError(
            "atari_noop_max", f"must be >= 0, got {p.atari_noop_max}.", "pass 0 to turn no-ops off."
        )


def atari_params(cfg: Config) -> AtariParams:
    """The Atari section of `cfg` (`cfg.env_params`), checked (`check_atari_params`).

    Raises:
        ConfigError: `cfg` is not of the Atari family, or a flag is out of range.
    """
    p = family_params(cfg, AtariParams)
    p.validate()
    return p


def make_atari_env(full_env_name: str, cfg: Config, render_mode: str | None = None) -> gym.Env:
    """Makes an Atari game with the standard preprocessing (see the module docstring for the stack).

    Args:
        full_env_name: `atari_<game>`, e.g. `atari_breakout`.
        cfg: the run's config; reads its Atari section (`cfg.env_params`, an `AtariParams`).
            `atari_episodic_life` must be False for evaluation (a lost life would end the episode).
        render_mode: passed to the ALE env (`rgb_array` gives 210x160x3 uint8 frames, `human` a window).

    Returns:
        A gymnasium env: obs `(env_framestack, 84, 84)` uint8 in [0, 255], channels first;
        Discrete actions (the game's minimal set, or 18 with `atari_full_action_space`); rewards
        float, their sign if `atari_clip_reward`; `info["episode"]` at the end of each whole game.

    Raises:
        ConfigError: unknown game or invalid Atari parameter.
        EnvError: ale-py is not installed.
    """
    env_id = atari_env_id(full_env_name)
    p = atari_params(cfg)
    max_frames = int(p.atari_max_episode_frames)
    kwargs: dict[str, Any] = {
        "obs_type": BASE_OBS_TYPE,
        "render_mode": render_mode,
        "full_action_space": bool(p.atari_full_action_space),
        "max_num_frames_per_episode": max(max_frames, 0),  # ALE's own limit; 0 = none
    }
    if env_id.startswith("ALE/"):  # v5 ids: turn off their built-in frameskip and sticky actions
        kwargs.update(frameskip=1, repeat_action_probability=0.0)
    env = gym.make(env_id, max_episode_steps=max_frames if max_frames > 0 else None, **kwargs)
    if BASE_OBS_TYPE == "ram":
        env = ScreenSpace(env)
    env = AtariPreprocessing(
        env,
        noop_max=int(p.atari_noop_max),
        frame_skip=int(p.env_frameskip),
        screen_size=ATARI_SCREEN_SIZE,
        terminal_on_life_loss=False,
        grayscale_obs=True,
        scale_obs=False,
    )
    env = RecordEpisodeStatistics(env)  # whole games, unclipped score
    if p.atari_episodic_life:
        env = EpisodicLifeEnv(env)
    if needs_fire_reset(env):
        # evaluation (no episodic life): FIRE after each lost life too, as every life began in training
        env = FireResetEnv(env, on_life_loss=not p.atari_episodic_life)
    if p.atari_clip_reward:
        env = TransformReward(env, sign_reward)
    env = FrameStackObservation(env, int(p.env_framestack))
    return env


class ScreenSpace(gym.Wrapper):
    """Declares the emulator's screen `Box(0, 255, (height, width), uint8)` as the observation space
    of an ALE env made with `obs_type="ram"`, whose steps it passes through unchanged: the space
    `AtariPreprocessing` sizes its two frame buffers from. That wrapper reads its frames from the
    emulator itself and never the observations below it, so they may be the RAM (the cheapest
    ALE makes on every emulator frame)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        height, width = env.unwrapped.ale.getScreenDims()  # type: ignore[attr-defined]
        self.observation_space = gym.spaces.Box(0, 255, (height, width), np.uint8)


def atari_frame_stack(cfg: Config) -> int:
    """`EnvFamily.frame_stack`: the frames per observation (`--env_framestack`), stacked by
    `FrameStackObservation` with the reset frame repeated after a reset."""
    return int(atari_params(cfg).env_framestack)


def _family_names() -> tuple[str, ...]:
    roms = set(ale_py.roms.get_all_rom_ids()) if ale_py is not None else set()
    canonical = sorted(n for n in ATARI_GAMES if n in roms or n in ATARI_ALIASES)
    return tuple(ATARI_PREFIX + n for n in canonical)


register_env_family(
    ATARI_PREFIX,
    make_atari_env,
    extra_params=AtariParams,
    default_overrides=ATARI_DEFAULTS,
    names=_family_names(),
    check_name=atari_env_id,
    frame_stack=atari_frame_stack,
)
