"""The `doom_` env family: VizDoom scenarios with Sample Factory's Doom defaults.

`--env=doom_basic`, `doom_defend_the_center`, `doom_battle`, `doom_duel`... (`scenarios.SCENARIOS`).
Each agent's env, innermost first:

1. `DoomGameEnv`: the game, headless, `env_frameskip` tics per step, `[3, res_h, res_w]` uint8.
2. `DoomMeasurements` for scenarios with `measurements`: `Dict(obs, measurements)`.
3. `DoomRewardShaping` for scenarios with a shaping scheme (`--doom_reward_shaping` JSON overrides
   its coefficients; `set_reward_shaping` changes them while training). With
   `--doom_scenario_path`, or on Sample Factory's installed maps, the battle scheme's KILLCOUNT term
   is dropped (the original map pays kills).
4. `RecordEpisodeStatistics`: the reported episode return is the game's reward plus the shaping,
   before scaling (as Sample Factory reports it, less its scaling): doom_basic's is the game score
   (+100 for the kill, -1 per tic, -6 per missed shot); the arena and multiplayer maps pay nothing
   themselves, so theirs is the shaped return (kills, frags, deaths, health, weapons...).
5. `TransformReward(x * reward_scaling)` when the scenario scales its reward (doom_basic: 0.01).

Scenarios with several agents become a `DoomMultiAgentEnv` (one game per agent over a local UDP
port); those with bots only are a single hosting game.

vizdoom is an optional dependency (`pip install surge-rl[doom]`); without it the family is still
registered and making an env raises `EnvError` saying what to install.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass
from functools import partial
from typing import Any

import gymnasium as gym
from gymnasium.wrappers import RecordEpisodeStatistics, TransformReward

from surge.cfg.config import Config, family_params, param
from surge.envs.doom.actions import DeltaHead
from surge.envs.doom.game import DoomGameEnv, NetGame, doom_available
from surge.envs.doom.measurements import DoomMeasurements
from surge.envs.doom.multiplayer import DoomMultiAgentEnv
from surge.envs.doom.reward_shaping import DoomRewardShaping, merge_scheme
from surge.envs.doom.scenarios import SCENARIOS, DoomScenario
from surge.envs.doom.sf_maps import maps_note, playable
from surge.envs.registry import register_env_family
from surge.errors import ConfigError, EnvError

DOOM_PREFIX = "doom_"


@dataclass
class DoomParams:
    """Flags of the `doom_` family (Sample Factory's Doom spelling)."""

    env_frameskip: int = param(4, "Game tics per env step (the action repeats; rewards are summed).")
    res_w: int = param(128, "Observation width in pixels after resizing.")
    res_h: int = param(72, "Observation height in pixels after resizing.")
    wide_aspect_ratio: bool = param(False, "Render 256x144 (16:9, wider view, slower) instead of 160x120.")
    fps: int = param(
        35, "Tics per second when playing in real time (enjoy, --doom_async_player) and of videos."
    )
    doom_continuous_turning: bool = param(
        False, "Continuous turning (a Box head) instead of the discretised one (battle, duel, deathmatch)."
    )
    doom_async_player: bool = param(
        False, "Real-time play at --fps (VizDoom ASYNC_PLAYER); for watching only."
    )
    doom_scenario_path: str = param(
        "", "Your own scenario: a .cfg (replaces the base config) or a .wad (the map)."
    )
    doom_reward_shaping: str = param(
        "", 'JSON overriding the reward-shaping coefficients, e.g. \'{"delta": {"HEALTH": [0.01, -0.01]}}\'.'
    )
    num_agents: int = param(-1, "Learning agents in a multiplayer match (-1: the scenario's).")
    num_bots: int = param(-1, "Built-in bots in a multiplayer match (-1: the scenario's).")
    timelimit: float = param(0.0, "Multiplayer match length in minutes (0: the scenario's, 4).")

    def validate(self) -> None:
        """Raises `ConfigError` for a flag out of range or a `doom_reward_shaping` that is not a
        JSON object, before any process starts."""
        for name in ("env_frameskip", "res_w", "res_h"):
            if getattr(self, name) < 1:
                raise ConfigError(
                    name,
                    f"must be >= 1, got {getattr(self, name)}.",
                    f"e.g. --{name}={getattr(DoomParams, name)}.",
                )
        if self.timelimit < 0:
            raise ConfigError(
                "timelimit", f"minutes, must be >= 0, got {self.timelimit}.", "0 keeps the scenario's."
            )
        _shaping_override(self.doom_reward_shaping)


#: Sample Factory's `doom_override_defaults` (sf_examples/vizdoom/doom/doom_params.py)
DOOM_DEFAULTS: dict[str, Any] = {
    "ppo_clip_value": 0.2,
    "obs_subtract_mean": 0.0,
    "obs_scale": 255.0,
    "exploration_loss": "symmetric_kl",
    "exploration_loss_coeff": 0.001,
    "normalize_returns": True,
    "normalize_input": True,
    # Sample Factory initialises the action head like every layer (orthogonal, gain 1): with one SGD
    # step per 1024 samples a 0.01-gain head barely leaves the uniform policy in the first 200k frames
    "action_head_init_gain": 1.0,
    # and keeps PyTorch's init in its (TorchScript) conv encoder; doom_basic at 500k frames, median
    # return: orthogonal encoder 69.0 (3 seeds), PyTorch's init 72.0 (5), Sample Factory 74.7 (6)
    "encoder_initialization": "torch_default",
    "eval_env_frameskip": 1,  # enjoy shows every tic: videos at --fps play at game speed
}


def _scenario(name: str) -> DoomScenario:
    if name in SCENARIOS:
        return SCENARIOS[name]
    close = difflib.get_close_matches(name, list(SCENARIOS), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"one of: {', '.join(SCENARIOS)}."
    raise ConfigError("env", f"unknown Doom scenario {name!r}.", hint)


def _shaping_override(raw: str) -> dict | None:
    """The `--doom_reward_shaping` JSON object, None when empty.

    Raises:
        ConfigError: not JSON, or not an object.
    """
    if not raw:
        return None
    try:
        override = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ConfigError(
            "doom_reward_shaping",
            f"not valid JSON ({e}).",
            'write e.g. {"delta": {"HEALTH": [0.01, -0.01]}}',
        ) from e
    if not isinstance(override, dict):
        raise ConfigError("doom_reward_shaping", "must be a JSON object.", 'e.g. {"delta": {...}}')
    return override


def _shaping_scheme(s: DoomScenario, p: DoomParams) -> dict | None:
    override = _shaping_override(p.doom_reward_shaping or "")
    scheme = merge_scheme(s.reward_shaping, override)
    own_map = p.doom_scenario_path or s.cfg_folder
    if scheme and own_map and not (override or {}).get("delta", {}).get("KILLCOUNT"):
        # the KILLCOUNT term stands in for the kill reward of Sample Factory's battle.wad script;
        # with the original map (installed, or a user's) the map pays kills itself
        scheme.get("delta", {}).pop("KILLCOUNT", None)
    return scheme


def default_reward_shaping(cfg: Config) -> dict | None:
    """The reward-shaping scheme `cfg`'s Doom envs start with (None: the scenario has none)."""
    return _shaping_scheme(playable(_scenario(cfg.env)), family_params(cfg, DoomParams))


def make_player_env(s: DoomScenario, p: DoomParams, net: NetGame | None, render_mode: str | None) -> gym.Env:
    """One agent's wrapped env (see the module docstring), with the family's flags `p`, on Sample
    Factory's map where it is installed (`sf_maps.playable`)."""
    s = playable(s)
    env: gym.Env = DoomGameEnv(
        s,
        frameskip=int(p.env_frameskip),
        res_w=int(p.res_w),
        res_h=int(p.res_h),
        wide_aspect_ratio=bool(p.wide_aspect_ratio),
        scenario_path=str(p.doom_scenario_path or ""),
        net=net,
        async_player=bool(p.doom_async_player),
        fps=int(p.fps or 35),
        render_mode=render_mode,
        continuous_turning=bool(p.doom_continuous_turning),
    )
    if s.measurements:
        env = DoomMeasurements(env)
    scheme = _shaping_scheme(s, p)
    if scheme:
        env = DoomRewardShaping(env, scheme)
    env = RecordEpisodeStatistics(env)  # returns: game reward + shaping, before scaling
    if s.reward_scaling != 1.0:
        scale = float(s.reward_scaling)
        # VizDoom's rewards are floats; gymnasium types them SupportsFloat (no float() per step)
        env = TransformReward(env, lambda r: r * scale)  # type: ignore[operator]
    return env


def player_env(scenario: str, cfg_values: dict, net: NetGame) -> gym.Env:
    """One player's env of a multi-agent match, made in the player's process
    (`DoomMultiAgentEnv`'s `make_player`): the scenario by name, the family's flags as a plain
    dict (`dataclasses.asdict(DoomParams)`)."""
    return make_player_env(SCENARIOS[scenario], DoomParams(**cfg_values), net, None)


def make_doom_env(full_env_name: str, cfg: Config, render_mode: str | None = None) -> Any:
    """Makes `doom_<scenario>`: a gymnasium env, or a multi-agent env for several agents.

    Raises:
        ConfigError: unknown scenario or bad `--doom_reward_shaping` / agent counts.
        EnvError: vizdoom is not installed or a `--doom_scenario_path` file is missing.
    """
    s = _scenario(full_env_name)
    p = family_params(cfg, DoomParams)
    if not doom_available():
        raise EnvError(
            f"{full_env_name} needs the vizdoom package: pip install 'surge-rl[doom]' (or vizdoom)"
        )
    num_agents = int(p.num_agents)
    num_agents = s.num_agents if num_agents <= 0 else num_agents
    num_bots = int(p.num_bots)
    num_bots = s.num_bots if num_bots < 0 else num_bots
    timelimit = float(p.timelimit or 0.0) or s.timelimit_minutes
    if p.doom_continuous_turning and not any(isinstance(h, DeltaHead) for h in s.heads):
        raise ConfigError(
            "doom_continuous_turning",
            f"{full_env_name} has no turning-delta head.",
            "use it with doom_battle, doom_battle2, doom_duel*, doom_deathmatch*.",
        )
    if num_agents > 1 and not s.multiplayer:
        raise ConfigError(
            "num_agents", f"{full_env_name} is a single-player scenario.", "leave --num_agents at -1."
        )
    if num_agents > 1:
        net = NetGame(0, num_agents, 0, num_bots, s.respawn_delay, timelimit)
        values = dataclasses.asdict(p)  # a plain dict crosses to the player processes
        probe = make_player_env(s, p, net, None)  # not started: only its spaces are read
        spaces = probe.observation_space, probe.action_space
        probe.close()
        return DoomMultiAgentEnv(partial(player_env, s.name, values), num_agents, net, *spaces)
    if s.multiplayer:  # one agent against bots: a hosting game with no one to wait for
        return make_player_env(s, p, NetGame(0, 1, 0, num_bots, s.respawn_delay, timelimit), render_mode)
    return make_player_env(s, p, None, render_mode)


def _maps_notes(cfg: Config) -> list[str]:
    """The run log's line on which map and files the scenario plays (`sf_maps.maps_note`)."""
    if not doom_available():  # making the env will say what to install
        return []
    p = family_params(cfg, DoomParams)
    return [maps_note(_scenario(cfg.env), str(p.doom_scenario_path or ""))]


register_env_family(
    DOOM_PREFIX,
    make_doom_env,
    extra_params=DoomParams,
    default_overrides=DOOM_DEFAULTS,
    names=tuple(SCENARIOS),
    check_name=_scenario,
    notes=_maps_notes,
)
