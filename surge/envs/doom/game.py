"""One VizDoom game as a gymnasium env: headless, frameskip, resize, channels first.

Observations are `uint8 [3, res_h, res_w]` (RGB, channels first): the game renders at 160x120
(256x144 with `wide_aspect_ratio`) and the frame is resized with nearest-neighbour interpolation,
as Sample Factory does. One `step` repeats the action for `frameskip` game tics
(`DoomGame.make_action(buttons, frameskip)`), summing the reward.

Episode ends: `terminated` when the game ends the episode (the player died, the goal was reached,
a multiplayer match's time limit passed); `truncated` when the single-player `episode_timeout`
(tics) ran out (`DoomGame.is_episode_timeout_reached`). After the end the observation is a black
frame (the next `reset` gives the real one). `info["game_variables"]` holds the scenario's game
variables by name (floats), refreshed each step (the last ones on the final step).

The engine starts on the first `reset` (creating the env only to read its spaces starts nothing),
through surge's launcher (`engine_launcher`), so a killed process leaves no engine nor
`/dev/shm/ViZDoom*` behind. The engine runs in the launcher's folder, where it writes its
settings file (`_vizdoom.ini`): a run leaves none in its working directory.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from surge.envs.doom.actions import DoomActions, with_continuous_turning
from surge.envs.doom.engine_launcher import PARENT_PID_ENV, launcher_path
from surge.envs.doom.frames import ChwNearestResize
from surge.envs.doom.scenarios import DoomScenario
from surge.errors import EnvError

#: a player that waits longer than this for the others' tic has lost them (seconds); a tic takes
#: milliseconds even on a loaded machine
TIC_BARRIER_TIMEOUT_S = 15.0


@dataclass
class NetGame:
    """A player's place in a network match: player 0 hosts `num_players` on `port`, the others join."""

    player_id: int
    num_players: int
    port: int
    num_bots: int = 0
    respawn_delay: int = 0
    timelimit_minutes: float = 4.0


def free_udp_port() -> int:
    """A UDP port the OS reports free right now (a hosting game's `NetGame.port`)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def scenario_config_path(scenario: DoomScenario, override: str = "") -> tuple[Path, Path | None]:
    """(`.cfg` to load, `.wad` to use instead of the cfg's map or None).

    Raises:
        EnvError: when `override` does not exist or is neither a .cfg nor a .wad.
    """
    if scenario.cfg_folder:  # Sample Factory's cfg in the install folder (`sf_maps.playable`)
        base = Path(scenario.cfg_folder) / scenario.cfg
    else:
        import vizdoom

        base = Path(vizdoom.scenarios_path) / scenario.cfg
    if not override:
        return base, None
    p = Path(override).expanduser()
    if not p.is_file():
        raise EnvError(f"--doom_scenario_path={override}: no such file")
    if p.suffix.lower() == ".cfg":
        return p.resolve(), None
    if p.suffix.lower() == ".wad":
        return base, p.resolve()
    raise EnvError(f"--doom_scenario_path={override}: expected a .cfg or a .wad file")


class DoomGameEnv(gym.Env):
    """A single VizDoom game (see the module docstring).

    Args:
        scenario: what to play.
        frameskip: game tics per `step`.
        res_w, res_h: observation size in pixels.
        wide_aspect_ratio: render 256x144 (16:9) instead of 160x120 before resizing.
        scenario_path: `--doom_scenario_path` (a .cfg or .wad), or "".
        net: this player's place in a network match, or None for a single-player game.
        async_player: real-time play at `fps` tics per second (VizDoom's ASYNC_PLAYER mode).
        fps: tic rate in async mode and the rendering rate.
        render_mode: None, "rgb_array" (the full-resolution frame) or "human".
        continuous_turning: a continuous turning head instead of the discretised one.

    Raises:
        ValueError: `continuous_turning` for a scenario without a turning-delta head.
    """

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 35}

    def __init__(
        self,
        scenario: DoomScenario,
        frameskip: int = 4,
        res_w: int = 128,
        res_h: int = 72,
        wide_aspect_ratio: bool = False,
        scenario_path: str = "",
        net: NetGame | None = None,
        async_player: bool = False,
        fps: int = 35,
        render_mode: str | None = None,
        continuous_turning: bool = False,
    ):
        self.scenario = scenario
        self.frameskip = int(frameskip)
        self.res_w, self.res_h = int(res_w), int(res_h)
        self.wide = bool(wide_aspect_ratio)
        self.cfg_path, self.wad_path = scenario_config_path(scenario, scenario_path)
        self.net = net
        self.async_player = async_player
        self.fps = int(fps)
        self.render_mode = render_mode
        self.actions = DoomActions(
            with_continuous_turning(scenario.heads) if continuous_turning else scenario.heads
        )
        self.action_space = self.actions.space
        self.observation_space = gym.spaces.Box(0, 255, (3, self.res_h, self.res_w), np.uint8)
        self.variables = tuple(scenario.variables)
        self.game: Any = None
        self._seed: int | None = None
        self._black = np.zeros(self.observation_space.shape, np.uint8)
        screen_hw = (144, 256) if self.wide else (120, 160)
        self._resize = ChwNearestResize(3, screen_hw, (self.res_h, self.res_w))
        self._last_frame: np.ndarray | None = None
        self._episodes = 0
        self._window = None
        #: a barrier shared by every player of a network match with several agents (lock-step tics)
        self.tic_barrier: Any = None

    # --- engine ------------------------------------------------------------------------------
    def _create_game(self) -> Any:
        import vizdoom as vzd

        s, g = self.scenario, vzd.DoomGame()
        g.set_vizdoom_path(str(launcher_path()))
        g.load_config(str(self.cfg_path))
        if self.wad_path is not None:
            g.set_doom_scenario_path(str(self.wad_path))
        if s.doom_map:
            g.set_doom_map(s.doom_map)
        g.set_window_visible(self.render_mode == "human")
        g.set_screen_resolution(
            vzd.ScreenResolution.RES_256X144 if self.wide else vzd.ScreenResolution.RES_160X120
        )
        g.set_screen_format(vzd.ScreenFormat.CRCGCB)  # channels first, as observations are
        g.set_render_hud(s.render_hud)
        g.set_render_decals(False)
        g.set_render_particles(False)
        g.set_sound_enabled(False)
        g.set_available_buttons([getattr(vzd.Button, b) for b in self.actions.buttons])
        g.set_available_game_variables([getattr(vzd.GameVariable, v) for v in self.variables])
        if s.skill is not None:
            g.set_doom_skill(s.skill)
        if s.living_reward is not None:
            g.set_living_reward(s.living_reward)
        if s.death_penalty is not None:
            g.set_death_penalty(s.death_penalty)
        if s.episode_timeout_tics is not None:
            g.set_episode_timeout(s.episode_timeout_tics)
        if self.async_player:
            g.set_mode(vzd.Mode.ASYNC_PLAYER)
            g.set_ticrate(max(1, self.fps))
        else:
            g.set_mode(vzd.Mode.PLAYER)
        if self._seed is not None:
            g.set_seed(self._seed % (2**32))
        if self.net is not None:
            self._add_network_args(g)
        os.environ[PARENT_PID_ENV] = str(os.getpid())  # the launcher checks it still has this parent
        return g

    def _add_network_args(self, g: Any) -> None:
        n = self.net
        assert n is not None
        if n.port == 0:  # a hosting game with no one joining: take a free port now, at init
            n.port = free_udp_port()
        if n.player_id == 0:
            g.add_game_args(
                f"-host {n.num_players} -port {n.port} -deathmatch +timelimit {n.timelimit_minutes} "
                "+sv_forcerespawn 1 +sv_noautoaim 1 +sv_respawnprotect 1 +sv_spawnfarthest 1 "
                f"+sv_nocrouch 1 +sv_nojump 1 +sv_nofreelook 1 +sv_noexit 1 +viz_respawn_delay {n.respawn_delay} "
                "+viz_connect_timeout 10"
            )
            g.add_game_args("+name AI0_host +colorset 0")
        else:
            g.add_game_args(f"-join 127.0.0.1:{n.port} +viz_connect_timeout 10")
            g.add_game_args(f"+name AI{n.player_id} +colorset {n.player_id % 8}")
        g.set_episode_timeout(int(n.timelimit_minutes * 60 * g.get_ticrate()))

    def _ensure_started(self) -> None:
        if self.game is not None:
            return
        game = self._create_game()
        try:
            game.init()
        except Exception as e:  # vizdoom raises its own ViZDoom*Exception types
            try:
                game.close()
            except Exception:
                pass
            raise EnvError(f"VizDoom failed to start {self.scenario.name} ({self.cfg_path}): {e}") from e
        self.game = game

    # --- gymnasium API -----------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._seed = int(seed)
            if self.game is not None:
                self.game.set_seed(self._seed % (2**32))
        self._ensure_started()
        if self._episodes > 0:  # the first episode starts with init(), seeded before it
            self.game.new_episode()
        self._episodes += 1
        self._prev_vars: dict[str, float] = {}
        if self.net is not None and self.net.player_id == 0 and self.net.num_bots > 0:
            self.game.send_game_command("removebots")
            for _ in range(self.net.num_bots):
                self.game.send_game_command("addbot")
        state = self.game.get_state()
        return self._frame(state), {"game_variables": self._variables(state)}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        buttons = self.actions.to_buttons(action)
        if self.tic_barrier is None:
            reward = self.game.make_action(buttons, self.frameskip)
        else:  # a network match: every player advances one tic, then waits for the others
            reward = 0.0
            for k in range(self.frameskip):
                self.game.set_action(buttons)
                self.game.advance_action(1, k == self.frameskip - 1)
                reward += self.game.get_last_reward()
                self.tic_barrier.wait(TIC_BARRIER_TIMEOUT_S)
        finished = self.game.is_episode_finished()
        state = None if finished else self.game.get_state()
        info: dict[str, Any] = {}
        if state is not None:
            info["game_variables"] = self._variables(state)
            self._prev_vars = info["game_variables"]
            obs = self._frame(state)
        else:
            info["game_variables"] = dict(self._prev_vars)  # the last ones seen in this episode
            obs = self._black
        truncated = (
            finished
            and self.net is None
            and self.game.is_episode_timeout_reached()
            and not self.game.is_player_dead()
        )
        terminated = finished and not truncated
        return obs, float(reward), terminated, truncated, info

    def _variables(self, state: Any) -> dict[str, float]:
        if state is None:
            return {}
        v = dict(zip(self.variables, state.game_variables.tolist(), strict=False))
        if "HEALTH" in v:  # a telefragged or gibbed player reads -999900: clamp as Sample Factory does
            v["HEALTH"] = max(0.0, v["HEALTH"])
        return v

    def _frame(self, state: Any) -> np.ndarray:
        if state is None or state.screen_buffer is None:
            return self._black
        frame = state.screen_buffer  # [3, H, W] uint8 (CRCGCB), a new array per state
        self._last_frame = frame
        return self._resize(frame)

    def render(self):
        if self.render_mode is None:
            return None
        frame = self._last_frame if self._last_frame is not None else self._black
        return np.ascontiguousarray(frame.transpose(1, 2, 0)) if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        if self.game is not None:
            try:
                self.game.close()
            finally:
                self.game = None


def doom_available() -> bool:
    """True when the `vizdoom` package is installed."""
    try:
        import vizdoom  # noqa: F401
    except ImportError:
        return False
    return True
