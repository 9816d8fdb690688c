"""Where a rollout worker's observations enter the trajectory buffers: each split's agents'
observations written at `(slots, t)`, checked against the observation space and for non-finite
values (`surge.sampling.observations`: replaced by 0, the agents' step marked inactive)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from surge.data.trajectory import tree_assign
from surge.errors import EnvError
from surge.sampling.observations import clean_obs, copy_rows, stack_obs
from surge.sampling.split_state import SplitState

#: one agent's observation from this size on is copied straight into its row: the copy it saves
#: outweighs a Python call per agent (`benchmarks/obs_rows.py`, per split step of 8 agents: Doom's
#: 27 KiB frames 0.65x the stack-and-assign time, 8 KiB 0.95x, 4 KiB 1.00x, CartPole's 16 B 1.16x)
ROW_COPY_MIN_BYTES = 8192


class ObsWriter:
    """Writes observations into the buffers' observation views.

    Args:
        obs: the buffers' observations as numpy views `[S, T+1, ...]` (a dict of them for a Dict
            space).
        space: the env's observation space.
        env_name: the env, named in errors.

    Attributes:
        nonfinite: agent steps whose observation held a NaN or ±inf since the worker last reported
            them (`RolloutWorker.pop_nonfinite` resets it).
    """

    def __init__(self, obs: Any, space: gym.Space, env_name: str):
        self.obs, self.space, self.env_name = obs, space, env_name
        #: a Box space's view when one agent's observation is large: rows written one agent at a
        #: time (`copy_rows`); small ones are stacked and assigned, cheaper below a few KiB
        big = isinstance(obs, np.ndarray) and obs[0, 0].nbytes >= ROW_COPY_MIN_BYTES
        self.rows = obs if big else None
        self.nonfinite = 0

    def write(self, split: SplitState, t: int, obs_list: list) -> None:
        """Writes the agents' observations (a list, one per agent) at `(split.slots, t)`: for a
        Box space of `ROW_COPY_MIN_BYTES` or more per agent and contiguous slots each into its row
        (one copy, where stacking first made two), else stacked (`put`).

        Raises:
            EnvError: they do not match the observation space.
        """
        if self.rows is not None and isinstance(split.np_index, slice):
            try:
                bad = copy_rows(self.rows[split.np_index, t], obs_list)
            except (ValueError, TypeError) as e:
                raise self.error(e) from e
            self._note_bad(split, bad)
            return
        try:
            stacked = stack_obs(obs_list, self.space)
        except (RuntimeError, ValueError, KeyError, TypeError) as e:
            raise self.error(e) from e
        self.put(split, t, stacked)

    def put(self, split: SplitState, t: int, obs: Any) -> None:
        """Writes the observations `[N, ...]` (a numpy array or dict of them) at `(split.slots, t)`.
        Non-finite values are replaced by 0 (in a copy) and their agents' step t is marked inactive
        by the next `advance`.

        Raises:
            EnvError: they do not match the observation space.
        """
        try:
            obs, bad = clean_obs(obs, split.n)
            tree_assign(self.obs, (split.np_index, t), obs)
        except (RuntimeError, ValueError, KeyError, TypeError) as e:
            raise self.error(e) from e
        self._note_bad(split, bad)

    def _note_bad(self, split: SplitState, bad: np.ndarray | None) -> None:
        """Counts the agents whose observation had a non-finite value (`bad` `[N]` bool, or None)
        and marks their step inactive at the split's next `advance`."""
        if bad is not None:
            self.nonfinite += int(bad.sum())
            split.bad_obs = bad if split.bad_obs is None else split.bad_obs | bad

    def error(self, e: Exception) -> EnvError:
        """The EnvError for observations that do not match the space, with `e`'s reason."""
        return EnvError(
            f"env {self.env_name!r} returned observations that do not match its observation_space "
            f"{self.space}: {e}. Run `surge check-env --env={self.env_name}` for details."
        )
