"""Reward shaping from Doom game variables, as a dict the run can change while training.

A scheme is a plain dict (JSON-friendly, so `--doom_reward_shaping` can override it):

- `"delta": {VAR: [per_unit_increase, per_unit_decrease]}`: each step, a change `d` of game
  variable VAR adds `d * per_unit_increase` (d > 0) or `-d * per_unit_decrease` (d < 0) to the
  reward; e.g. `FRAGCOUNT: [1, -1.5]`, `HEALTH: [0.005, -0.003]`. DAMAGECOUNT and HITCOUNT changes
  are capped at 200 and 5 per step.
- `"increase_event": {VAR: r}`: `r` whenever VAR goes up, whatever the amount (health pickups).
- `"selected_weapon": {"SELECTED<i>": r}`: `r` per step while weapon i (with ammo) has been held
  for the last 5 steps.

No shaping is given on the step a player respawns (counters jump) nor on the last step of an
episode. The coefficients are Sample Factory's (sf_examples/vizdoom/doom/wrappers/reward_shaping.py,
from Petrenko et al. 2020, "Sample Factory", appendix on Doom reward shaping).
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any

import gymnasium as gym

NUM_WEAPONS = 8
_WEAPON_PREFERENCE = {2: 1, 3: 5, 4: 5, 5: 5, 6: 10, 7: 10}  # pistol < shotgun/chaingun/rockets < plasma/BFG
_DELTA_LIMITS = {"DAMAGECOUNT": 200.0, "HITCOUNT": 5.0}


def _weapon_terms() -> tuple[dict, dict]:
    delta, selected = {}, {}
    for w in range(NUM_WEAPONS):
        pref = _WEAPON_PREFERENCE.get(w, 1)
        delta[f"WEAPON{w}"] = [0.02 * pref, -0.01 * pref]
        delta[f"AMMO{w}"] = [0.0002 * pref, -0.0001 * pref]
        selected[f"SELECTED{w}"] = 0.0002 * pref
    return delta, selected


_W_DELTA, _W_SELECTED = _weapon_terms()

REWARD_SHAPING_DEATHMATCH_V0: dict[str, Any] = {
    "delta": {
        "FRAGCOUNT": [1.0, -1.5],
        "DEATHCOUNT": [-0.75, 0.75],
        "HITCOUNT": [0.01, -0.01],
        "DAMAGECOUNT": [0.003, -0.003],
        "HEALTH": [0.005, -0.003],
        "ARMOR": [0.005, -0.001],
        **_W_DELTA,
    },
    "selected_weapon": _W_SELECTED,
}
REWARD_SHAPING_DEATHMATCH_V1: dict[str, Any] = copy.deepcopy(REWARD_SHAPING_DEATHMATCH_V0)
REWARD_SHAPING_DEATHMATCH_V1["delta"].update(
    FRAGCOUNT=[1.0, -0.001],
    DEATHCOUNT=[-1.0, 1.0],
    HITCOUNT=[0.0, 0.0],
    DAMAGECOUNT=[0.01, -0.01],
    HEALTH=[0.01, -0.01],
)
#: battle: the deathmatch terms plus +1 per monster killed (Sample Factory's battle.wad gives that
#: reward from its map script; vizdoom's arena gives none, so it comes from KILLCOUNT here)
REWARD_SHAPING_BATTLE: dict[str, Any] = copy.deepcopy(REWARD_SHAPING_DEATHMATCH_V0)
REWARD_SHAPING_BATTLE["delta"]["KILLCOUNT"] = [1.0, 0.0]
#: health gathering: +1 per medkit picked up (Sample Factory, after Beeching et al. 2019)
REWARD_SHAPING_GATHERING: dict[str, Any] = {"increase_event": {"HEALTH": 1.0}}


def merge_scheme(base: dict | None, override: dict | None) -> dict | None:
    """`base` with the entries of `override` replacing its own, one level into each section."""
    if not override:
        return copy.deepcopy(base)
    out = copy.deepcopy(base) if base else {}
    for section, values in override.items():
        if isinstance(values, dict):
            out.setdefault(section, {}).update(copy.deepcopy(values))
        else:
            out[section] = copy.deepcopy(values)
    return out


class DoomRewardShaping(gym.Wrapper):
    """Adds the shaping of `scheme` to the env reward; reads game variables from `info`.

    `reward_shaping` (the live scheme) can be replaced at any time with `set_reward_shaping`
    (Sample Factory's RewardShapingInterface); `get_default_reward_shaping` returns the scheme the
    env started with. `info["shaping_reward"]` holds this step's shaping term.
    """

    def __init__(self, env: gym.Env, scheme: dict):
        super().__init__(env)
        self._default = copy.deepcopy(scheme)
        self.reward_shaping: dict = copy.deepcopy(scheme)
        self._prev: dict[str, float] = {}
        self._prev_dead = True
        self._selected: deque[int] = deque(maxlen=5)

    def get_default_reward_shaping(self) -> dict:
        return copy.deepcopy(self._default)

    def set_reward_shaping(self, scheme: dict) -> None:
        self.reward_shaping = copy.deepcopy(scheme)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._prev, self._prev_dead = dict(info.get("game_variables", {})), True
        self._selected.clear()
        return obs, info

    def _shaping(self, v: dict[str, float]) -> float:
        s, r = self.reward_shaping, 0.0
        for name, (up, down) in s.get("delta", {}).items():
            if name in v and name in self._prev:
                d = v[name] - self._prev[name]
                d = min(d, _DELTA_LIMITS.get(name, d))
                if d > 1e-6:
                    r += d * up
                elif d < -1e-6:
                    r += -d * down
        for name, bonus in s.get("increase_event", {}).items():
            if name in v and name in self._prev and v[name] > self._prev[name] + 1e-6:
                r += bonus
        table = s.get("selected_weapon")
        if table:
            w = int(max(0.0, v.get("SELECTED_WEAPON", 0.0)))
            self._selected.append(w)
            held = len(self._selected) == self._selected.maxlen and all(x == w for x in self._selected)
            if held and v.get("SELECTED_WEAPON_AMMO", 0.0) > 0:
                r += table.get(f"SELECTED{w}", 0.0)
        return r

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        v = info.get("game_variables", {})
        alive = not v.get("DEAD", 0.0)
        shaping = 0.0
        if not (terminated or truncated) and not (self._prev_dead and alive):
            shaping = self._shaping(v)
        if v:
            self._prev = dict(v)
            self._prev_dead = not alive
        info["shaping_reward"] = shaping
        return obs, reward + shaping, terminated, truncated, info
