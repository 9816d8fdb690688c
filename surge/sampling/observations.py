"""The observations a rollout worker writes into the trajectory buffers: stacked per split,
concatenated from batched envs, and checked for non-finite values.

Non-finite env outputs (NaN or ±inf rewards and floating-point observations) are caught here, where
they enter: the value is replaced by 0 and the agent's step is marked inactive (`is_active=False`),
so no learner trains on it, inference never sees a NaN, and the run goes on. Each is counted
(`pop_nonfinite`) and the run's log reports the counts with the env's name. Sample Factory trains
on them silently; SB3's `VecCheckNan` raises instead. A week-long run should not die of one bad
step of one env among hundreds, nor carry a NaN into its weights and checkpoints, so this skips
and reports rather than raising. The check is one `isfinite(...).all()` per split step on the
rewards and one float64 sum per floating-point observation tensor already built (NaN and inf
propagate into it; integer observations such as Atari frames cannot be non-finite and are not
checked).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np


def stack_obs(obs_list: list, space: gym.Space):
    """The agents' observations stacked `[N, ...]` in the space's dtype: a numpy array, or a dict
    of them."""
    if isinstance(space, gym.spaces.Dict):
        return {k: stack_obs([o[k] for o in obs_list], s) for k, s in space.spaces.items()}
    # one conversion into the space's dtype, where np.stack then astype made two passes (the cost:
    # docs/benchmarks.md); observations of different shapes raise ValueError either way
    return np.asarray(obs_list, dtype=space.dtype)


def clean_obs(obs: Any, n: int) -> tuple[Any, np.ndarray | None]:
    """Finds NaN and ±inf in observations `[n, ...]` (a numpy array or a dict of them).

    Returns:
        `(obs, None)` when every value is finite (the common case: one float64 sum per
        floating-point array; integer arrays are not checked), else `(a copy of obs with the
        non-finite values replaced by 0, [n] bool of the agents that had one)`. `obs` itself is
        never modified (it may be the env's own array).
    """
    if isinstance(obs, dict):
        out, bad = dict(obs), None
        for k, v in obs.items():
            out[k], sub = clean_obs(v, n)
            if sub is not None:
                bad = sub if bad is None else bad | sub
        return out, bad
    # one pass without a temporary: NaN and inf propagate into the sum, and float64 does not
    # overflow on float32 values (6x cheaper than isfinite(...).all() on [64, 4, 84, 84])
    if obs.dtype.kind != "f" or math.isfinite(obs.sum(dtype=np.float64)):
        return obs, None
    finite = np.isfinite(obs)
    bad = ~finite.reshape(n, -1).all(axis=1)
    if not bad.any():  # float64 values whose sum overflowed: all finite
        return obs, None
    return np.where(finite, obs, 0).astype(obs.dtype, copy=False), bad


def as_array_tree(obs):
    """Batched envs' observations as numpy arrays (or a dict of them)."""
    if isinstance(obs, dict):
        return {k: as_array_tree(v) for k, v in obs.items()}
    return np.asarray(obs)


def cat_obs(parts: list):
    if isinstance(parts[0], dict):
        return {k: cat_obs([p[k] for p in parts]) for k in parts[0]}
    return np.concatenate(parts)


def copy_rows(rows: np.ndarray, obs_list: list) -> np.ndarray | None:
    """Copies each agent's observation into its row of `rows` (`[N, ...]`, a view of the buffers),
    converted to its dtype as `stack_obs` converts; non-finite values are then replaced by 0 in
    place (`clean_obs`). Returns `[N]` bool of the agents that had one, or None.

    Raises:
        ValueError: an observation's shape is not a row's (numpy alone would broadcast some).
    """
    shape = rows.shape[1:]
    for e, o in enumerate(obs_list):
        a = np.asarray(o)
        if a.shape != shape:
            raise ValueError(f"an observation of shape {a.shape}, the space's {shape}")
        rows[e] = a
    cleaned, bad = clean_obs(rows, len(rows))
    if bad is not None:
        rows[...] = cleaned
    return bad
