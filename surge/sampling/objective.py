"""PBT's objective: a per-episode statistic an env reports (`--pbt_target_objective`).

`true_reward` is the episode's return (`info["episode"]["r"]`, in env reward units). Any other
name is read from the info of the step that ends the episode, in Sample Factory's place first:
`info["episode_extra_stats"][name]`, then `info[name]`, then `info["game_variables"][name]` (the
Doom family's game variables, e.g. FRAGCOUNT or KILLCOUNT: Doom's true objective).
"""

from __future__ import annotations

from typing import Any

TRUE_REWARD = "true_reward"


def episode_statistic(info: dict[str, Any], name: str) -> float | None:
    """The value of statistic `name` in an episode-ending step's `info` (see the module
    docstring), or None when the env does not report it or it is not a number."""
    for holder in (info.get("episode_extra_stats"), info, info.get("game_variables")):
        if isinstance(holder, dict) and name in holder:
            try:
                return float(holder[name])
            except (TypeError, ValueError):
                return None
    return None
