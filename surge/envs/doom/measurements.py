"""The measurements vector: game variables as a second observation beside the image.

Sample Factory's `DoomAdditionalInput` (after Dosovitskiy & Koltun 2017, "Learning to Act by
Predicting the Future"): the observation becomes `Dict(obs=uint8 [3, H, W],
measurements=float32 [23])` with, in order: selected weapon, its ammo / 15 (max 5), health / 30,
armour / 30, kills / 10, attack ready (0/1), players in the match / 5, weapons 0-7 owned (count),
ammo 0-7 / 15 (max 5). Missing variables read as 0. surge reads kills from KILLCOUNT (Sample
Factory's battle map exposes them as USER2).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from surge.envs.doom.reward_shaping import NUM_WEAPONS

NUM_MEASUREMENTS = 7 + 2 * NUM_WEAPONS


class DoomMeasurements(gym.ObservationWrapper):
    """Adds `measurements` (float32 `[NUM_MEASUREMENTS]`) from `info["game_variables"]`."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        low = [0.0, 0.0, -1.0, -1.0, -50.0, 0.0, 0.0] + [0.0] * (2 * NUM_WEAPONS)
        high = [20.0, 50.0, 50.0, 50.0, 50.0, 1.0, 10.0] + [5.0] * NUM_WEAPONS + [50.0] * NUM_WEAPONS
        self.observation_space = gym.spaces.Dict(
            {
                "obs": env.observation_space,
                "measurements": gym.spaces.Box(np.array(low, np.float32), np.array(high, np.float32)),
            }
        )
        self._vars: dict[str, float] = {}

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._vars = info.get("game_variables", {})
        return self.observation(obs), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._vars = info.get("game_variables", {})
        return self.observation(obs), reward, terminated, truncated, info

    def observation(self, obs):
        v = self._vars
        m = np.empty(NUM_MEASUREMENTS, np.float32)
        m[0] = round(max(0.0, v.get("SELECTED_WEAPON", 0.0)))
        m[1] = min(max(0.0, v.get("SELECTED_WEAPON_AMMO", 0.0)) / 15.0, 5.0)
        m[2] = max(0.0, v.get("HEALTH", 0.0)) / 30.0
        m[3] = v.get("ARMOR", 0.0) / 30.0
        m[4] = v.get("KILLCOUNT", 0.0) / 10.0
        m[5] = v.get("ATTACK_READY", 0.0)
        m[6] = v.get("PLAYER_COUNT", 1.0) / 5.0
        for w in range(NUM_WEAPONS):
            m[7 + w] = max(0.0, v.get(f"WEAPON{w}", 0.0))
            m[7 + NUM_WEAPONS + w] = min(max(0.0, v.get(f"AMMO{w}", 0.0)) / 15.0, 5.0)
        return {"obs": obs, "measurements": m}
