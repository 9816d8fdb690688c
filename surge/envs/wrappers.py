"""Gymnasium wrappers that gymnasium itself lacks (the Atari ones follow SB3 / OpenAI baselines).

Both Atari wrappers sit *above* `gymnasium.wrappers.RecordEpisodeStatistics` in the Atari stack
(see `surge.envs.atari`), so they may step the env inside `reset()`; when such a hidden step ends
the whole game, the `info["episode"]` record it produced is carried into the info that `reset()`
returns, so no episode record is lost (surge's `SingleAgentAsMultiAgent` merges the reset info
into the info of the step that ended the episode).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np

if TYPE_CHECKING:  # ale_py is optional: only its types are read here
    from ale_py.env import AtariEnv

EPISODE_KEY = "episode"


def _carry_episode(from_info: dict[str, Any], into_info: dict[str, Any]) -> dict[str, Any]:
    """Copies `from_info["episode"]` (if any) into `into_info` and returns `into_info`."""
    if EPISODE_KEY in from_info:
        into_info = dict(into_info)
        into_info[EPISODE_KEY] = from_info[EPISODE_KEY]
    return into_info


def sign_reward(reward: Any) -> float:
    """Bins a reward into {-1.0, 0.0, +1.0} by its sign (DQN's Atari reward clipping).

    A module-level function rather than a lambda so that wrapped envs stay picklable.
    """
    return float(np.sign(reward))


class EpisodicLifeEnv(gym.Wrapper):
    """Makes the loss of a life look like the end of an episode, for training only (Mnih et al. 2015).

    - `step()` returns `terminated=True` when the ALE lives counter goes down (and the game goes on).
    - `reset()` after such a life loss does not restart the game: it takes one no-op step (action 0)
      and returns that observation, so the next "episode" is the next life of the same game. Only
      when the game really ended (terminated or truncated by the env below), or when `reset()` is
      given a `seed` or `options`, is the env below really reset.

    Lives are read from `env.unwrapped.ale.lives()`, so the env must be an ALE env. Episode
    statistics recorded below this wrapper therefore cover whole games.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.lives = 0
        self.was_real_done = True
        self._atari = cast("AtariEnv", env.unwrapped)  # the same object at every step

    def _ale_lives(self) -> int:
        return int(self._atari.ale.lives())

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.was_real_done = bool(terminated or truncated)
        lives = self._ale_lives()
        if 0 < lives < self.lives:
            # lives == 0 is the end of the game, which the env below reports itself.
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        if self.was_real_done or seed is not None or options is not None:
            obs, info = self.env.reset(seed=seed, options=options)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                # The no-op step ended the game: a real reset, keeping the game's episode record.
                step_info = info
                obs, info = self.env.reset()
                info = _carry_episode(step_info, info)
        self.was_real_done = False
        self.lives = self._ale_lives()
        return obs, info


class FireResetEnv(gym.Wrapper):
    """Presses FIRE, then action 2, after every reset, for games that wait for FIRE to start
    (Breakout launches the ball only on FIRE). Apply it only when `needs_fire_reset(env)`.

    If one of those two steps ends the episode the env is reset again (without a seed); an
    `info["episode"]` produced by such a step is carried into the returned info. The returned info
    is the reset info updated with the info of the last of the two steps (e.g. current `lives`).

    With `on_life_loss` (evaluation, where `EpisodicLifeEnv` is off and a lost life does not reset),
    the same two presses follow each lost life inside `step()`: an agent trained with episodic
    life never had to press FIRE itself (every life began with these presses), and a greedy one
    would otherwise stand still until the game's time limit. Their rewards are added to the step's
    reward and their infos merged into its info (an `info["episode"]` included); the step
    returns the observation after them, and ends the episode if one of them does. This is the game
    that Stable-Baselines3's and OpenAI baselines' evaluation plays (their evaluation env keeps the
    episodic-life and fire-reset wrappers).

    Raises:
        ValueError: if the action meanings of the env do not include FIRE, or it has < 3 actions.
    """

    def __init__(self, env: gym.Env, on_life_loss: bool = False):
        super().__init__(env)
        self._atari = cast("AtariEnv", env.unwrapped)  # the same object at every step
        meanings = list(self._atari.get_action_meanings())
        if "FIRE" not in meanings or len(meanings) < 3:
            raise ValueError(f"FireResetEnv needs a FIRE action and at least 3 actions, got {meanings}")
        self.fire_action = meanings.index("FIRE")
        self.on_life_loss = on_life_loss
        self.lives = 0

    def _ale_lives(self) -> int:
        return int(self._atari.ale.lives())

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if not self.on_life_loss:
            return obs, reward, terminated, truncated, info
        lives = self._ale_lives()
        if 0 < lives < self.lives and not (terminated or truncated):
            for press in (self.fire_action, 2):
                obs, r, terminated, truncated, step_info = self.env.step(press)
                reward, info = float(reward) + float(r), {**info, **step_info}
                if terminated or truncated:
                    break
            lives = self._ale_lives()
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        for action in (self.fire_action, 2):
            obs, _, terminated, truncated, step_info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset()
                info = _carry_episode(step_info, info)
            else:
                info = {**info, **{k: v for k, v in step_info.items() if k != EPISODE_KEY}}
        if self.on_life_loss:
            self.lives = self._ale_lives()
        return obs, info


def needs_fire_reset(env: gym.Env) -> bool:
    """True when the game of this ALE env has a FIRE action (and at least 3 actions)."""
    meanings = list(cast("AtariEnv", env.unwrapped).get_action_meanings())
    return "FIRE" in meanings and len(meanings) >= 3


def is_channels_last(shape: tuple[int, ...]) -> bool:
    """True for a 3-D image shape that looks height-width-channel: at most 4 channels last and
    height and width above 4 ((84, 84, 4), (7, 7, 3)); (4, 84, 84) is channels first."""
    return len(shape) == 3 and shape[2] <= 4 < min(shape[0], shape[1])


class ChannelsFirst(gym.ObservationWrapper):
    """Transposes height-width-channel images (`is_channels_last`) to channels first (C, H, W),
    the layout of surge's conv encoders, in a Box observation or in the Box entries of a Dict;
    other observations pass unchanged. Usable from the command line:
    `--env_wrappers surge.envs.wrappers:ChannelsFirst`."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = self._space(env.observation_space)

    @staticmethod
    def _space(space: gym.Space) -> gym.Space:
        if isinstance(space, gym.spaces.Dict):
            return gym.spaces.Dict({k: ChannelsFirst._space(s) for k, s in space.spaces.items()})
        if isinstance(space, gym.spaces.Box) and is_channels_last(space.shape):
            return gym.spaces.Box(
                np.transpose(space.low, (2, 0, 1)), np.transpose(space.high, (2, 0, 1)), dtype=space.dtype
            )
        return space

    def _transpose(self, obs: Any, space: gym.Space) -> Any:
        if isinstance(space, gym.spaces.Dict):
            return {k: self._transpose(obs[k], s) for k, s in space.spaces.items()}
        if isinstance(space, gym.spaces.Box) and is_channels_last(space.shape):
            return np.ascontiguousarray(np.transpose(obs, (2, 0, 1)))
        return obs

    def observation(self, observation: Any) -> Any:
        return self._transpose(observation, self.env.observation_space)


def is_flattenable(space: gym.Space) -> bool:
    """True when gymnasium can flatten `space` into one numeric vector (`FlattenObservation`):
    False for Graph and Sequence spaces, and for custom spaces that do not say (MiniGrid's
    `MissionSpace`, whose `is_np_flattenable` raises NotImplementedError)."""
    try:
        return bool(space.is_np_flattenable)
    except NotImplementedError:
        return False


def unflattenable_entries(space: gym.Space, path: str = "") -> list[tuple[str, gym.Space]]:
    """The `(path, space)` of each Dict entry, at any depth, that `is_flattenable` refuses, e.g.
    `[("['mission']", MissionSpace(...))]` for MiniGrid; [] when `space` is not a Dict."""
    if not isinstance(space, gym.spaces.Dict):
        return []
    out = []
    for k, s in space.spaces.items():
        if isinstance(s, gym.spaces.Dict):
            out += unflattenable_entries(s, f"{path}[{k!r}]")
        elif not is_flattenable(s):
            out.append((f"{path}[{k!r}]", s))
    return out


class DropUnflattenable(gym.ObservationWrapper):
    """Removes from a Dict observation the entries that cannot be flattened into numbers
    (`unflattenable_entries`: text missions, graphs, sequences), at any depth, so that
    `FlattenObservation` can follow. Usable from the command line, e.g. for MiniGrid:
    `--env_wrappers surge.envs.wrappers:DropUnflattenable FlattenObservation`.

    Raises:
        ValueError: the observation space is not a Dict, or no entry would be left.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Dict):
            raise ValueError(f"DropUnflattenable needs a Dict observation space, got {space}")
        self._kept = self._space(space)  # the Dict kept, typed as one (observation_space is a Space)
        self.observation_space = self._kept
        if not self._kept.spaces:
            raise ValueError(f"DropUnflattenable would drop every entry of {space}")

    @classmethod
    def _space(cls, space: gym.spaces.Dict) -> gym.spaces.Dict:
        kept: dict[str, gym.Space] = {}
        for k, s in space.spaces.items():
            if isinstance(s, gym.spaces.Dict):
                inner = cls._space(s)
                if inner.spaces:
                    kept[k] = inner
            elif is_flattenable(s):
                kept[k] = s
        return gym.spaces.Dict(kept)

    def observation(self, observation: Any) -> Any:
        return self._keep(observation, self._kept)

    def _keep(self, obs: Any, space: gym.spaces.Dict) -> dict[str, Any]:
        return {
            k: self._keep(obs[k], s) if isinstance(s, gym.spaces.Dict) else obs[k]
            for k, s in space.spaces.items()
        }
