"""Everything is multi-agent inside surge: the conventions, and the wrapper for single-agent envs.

The contract (Sample Factory's, with gymnasium's terminated/truncated split):

- `env.num_agents: int`; `observation_space` and `action_space` describe ONE agent.
- `reset(seed=None) -> (obs: list, infos: list[dict])`, one item per agent.
- `step(actions: list) -> (obs, rewards, terminated, truncated, infos)`, each a list with one item
  per agent (rewards float, terminated/truncated bool).
- Auto-reset: when an agent's `terminated or truncated` is True, the returned obs is already the
  first observation of its next episode (the last one is not needed to act).
- `infos[i]["episode"] = {"r": return, "l": length_in_env_steps}` marks the end of a *true* episode
  (e.g. a whole Atari game, not one life); only those are reported as episode statistics.
- `infos[i]["is_active"] = False` deactivates an agent for that step (its sample is not trained on).
- `infos[i][FINAL_FRAME_KEY]`: with render_mode "rgb_array" (`surge enjoy --save_video`), the
  single-agent wrapper puts there the episode's last frame, rendered before the auto-reset (a
  render after the step shows the next episode's first frame).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.wrappers import RecordEpisodeStatistics

from surge.envs.action_masks import wrap_rl_games_mask

#: info key of an ended episode's last frame (HxWx3 uint8, `env.render()` before the auto-reset)
FINAL_FRAME_KEY = "final_frame"


def is_multi_agent_env(env: Any) -> bool:
    """True when `env` follows the multi-agent contract (Sample Factory's `is_multiagent_env`)."""
    if hasattr(env, "is_multiagent"):
        return bool(env.is_multiagent)
    if isinstance(env, gym.Env):
        return getattr(env, "num_agents", 1) > 1
    return hasattr(env, "num_agents")


def has_wrapper(env: gym.Env, wrapper_type: type) -> bool:
    """True when `wrapper_type` appears anywhere in the wrapper chain of `env`."""
    while True:
        if isinstance(env, wrapper_type):
            return True
        if not isinstance(env, gym.Wrapper):
            return False
        env = env.env


class SingleAgentAsMultiAgent:
    """Presents a gymnasium single-agent env as a multi-agent env with one agent and auto-reset.

    An env of rl_games' API with `has_action_mask()` True gets its `get_action_mask()` as the
    observation's `action_mask` entry (`surge.envs.action_masks.RlGamesActionMask`).

    Adds `RecordEpisodeStatistics` outermost unless the env already records its episodes inside
    (the Atari family does, below the episodic-life and reward-clipping wrappers, so that reported
    returns are whole games in unclipped score).
    """

    num_agents = 1
    is_multiagent = False

    def __init__(self, env: gym.Env):
        env = wrap_rl_games_mask(env)  # rl_games' has_action_mask()/get_action_mask(): into the obs
        if not has_wrapper(env, RecordEpisodeStatistics):
            env = RecordEpisodeStatistics(env)
        self.env = env
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        self.render_mode = getattr(env, "render_mode", None)
        self._seed: int | None = None

    def reset(self, seed: int | None = None) -> tuple[list, list[dict]]:
        obs, info = self.env.reset(seed=seed)
        return [obs], [info]

    def step(self, actions) -> tuple[list, list[float], list[bool], list[bool], list[dict]]:
        obs, reward, terminated, truncated, info = self.step_one(actions[0])
        return [obs], [float(reward)], [bool(terminated)], [bool(truncated)], [info]

    def step_one(self, action) -> tuple[Any, Any, Any, Any, dict]:
        """`step` without the per-agent lists: `(obs, reward, terminated, truncated, info)` of the
        one agent as the env returned them, with the same auto-reset. The rollout worker's loop
        over single-agent envs calls this: building and slicing the lists shows on cheap envs."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            if self.render_mode == "rgb_array":  # enjoy's video: the reset below replaces this frame
                info = {**info, FINAL_FRAME_KEY: self.env.render()}
            obs, reset_info = self.env.reset()
            info = {**reset_info, **info}
        return obs, reward, terminated, truncated, info

    def render(self):
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self):
        return self.env.unwrapped
