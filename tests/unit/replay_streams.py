"""Random env-agent streams for the replay tests, and naive references computed from them.

Each column's steps are numbered g = 0, 1, ... (global per column); the observation of step g is
the float `1000 * column + g` (the bootstrap observation of a block is the next step's), actions
and rnn states encode the same id, so a sampled tensor says which step it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass
class Stream:
    rewards: list[float] = field(default_factory=list)
    terminated: list[bool] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)
    active: list[bool] = field(default_factory=list)
    cut_after: set[int] = field(default_factory=set)  # steps after which a block did not continue

    def __len__(self) -> int:
        return len(self.rewards)


def obs_id(col: int, g: int) -> float:
    return 1000.0 * col + g


def make_block(
    rng: np.random.Generator,
    streams: list[Stream],
    cols: list[int],
    T: int,
    p_term: float,
    p_trunc: float,
    p_inactive: float,
    state: int = 3,
) -> dict[str, torch.Tensor]:
    """A `[T, n]` block for `cols`, continuing each column's stream; records it in `streams`."""
    n = len(cols)
    obs = torch.zeros(T + 1, n, 1)
    rnn = torch.zeros(T + 1, n, state)
    rew = torch.from_numpy(rng.normal(size=(T, n)).astype(np.float32))
    u = rng.random((T, n))
    term = torch.from_numpy(u < p_term)
    trunc = torch.from_numpy((u >= p_term) & (u < p_term + p_trunc))
    act = torch.from_numpy(rng.random((T, n)) >= p_inactive)
    actions = torch.zeros(T, n, dtype=torch.int64)
    for i, c in enumerate(cols):
        g0 = len(streams[c])
        for t in range(T + 1):
            obs[t, i, 0] = obs_id(c, g0 + t)
            rnn[t, i] = obs_id(c, g0 + t)
        for t in range(T):
            actions[t, i] = g0 + t
            streams[c].rewards.append(float(rew[t, i]))
            streams[c].terminated.append(bool(term[t, i]))
            streams[c].truncated.append(bool(trunc[t, i]))
            streams[c].active.append(bool(act[t, i]))
    return {
        "obs": obs,
        "actions": actions,
        "rewards": rew,
        "terminated": term,
        "truncated": trunc,
        "is_active": act,
        "rnn_states": rnn,
    }


def naive_n_step(s: Stream, g: int, n: int, gamma: float):
    """(return, discount, next observation's step, steps) of step g by a plain loop, or None when
    the step is not sampleable (window incomplete or inactive)."""
    G = 0.0
    for k in range(n):
        j = g + k
        if j >= len(s) or not s.active[j]:
            return None
        G += gamma**k * s.rewards[j]
        trunc = s.truncated[j] or j in s.cut_after
        if s.terminated[j]:
            return G, 0.0, j + 1, k + 1
        if trunc:
            return G, gamma ** (k + 1), j, k + 1
    return G, gamma**n, g + n, n


def stack_frames(newest: np.ndarray, dones: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Observations `[T+1, n, F, ...]` as gymnasium's `FrameStackObservation` shows them: obs 0 is
    `first` `[n, F, ...]`; obs t+1 is obs t shifted by one frame with `newest[t + 1]` last
    (`newest` `[T+1, n, ...]`), or that frame repeated F times when step t ended the episode
    (`dones` `[T, n]` bool: a reset stack)."""
    T, F = dones.shape[0], first.shape[1]
    obs = np.empty((T + 1, *first.shape), first.dtype)
    obs[0] = first
    for t in range(T):
        shifted = np.concatenate([obs[t][:, 1:], newest[t + 1][:, None]], axis=1)
        reset = np.repeat(newest[t + 1][:, None], F, axis=1)
        obs[t + 1] = np.where(dones[t].reshape(-1, *[1] * (obs.ndim - 2)), reset, shifted)
    return obs
