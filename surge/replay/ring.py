"""The replay ring: a fixed-capacity, time-major store per env-agent column, `[capacity, columns, ...]`.

Like rlpyt's replay buffers (`[T, B]` samples in a ring), but each column (one env-agent stream: an
actor of the sampler) has its own write cursor, because surge's learner receives trajectories per
agent (`surge.data.routing`), not whole `[T, B]` sampler batches. A block `[T, n]` (the layout of
`LearnerBase.prepare_batch`: obs `[T+1, n, ...]`, actions `[T, n, ...]`, rewards `[T, n]`, ...) is
appended to the n columns named by `columns`; column c's steps go to rows `head[c] .. head[c]+T-1`
(mod capacity) and its bootstrap observation `obs[T]` (and `rnn_states[T]`) to row `head[c]+T`,
the column's *pending* row: it holds an observation only, and the column's next block, whose first
observation is that same one (`TrajectoryBuffers.start_next`), overwrites it with its own first step.
So a column holds at most `capacity - 1` steps and the observation after its newest one.

Per step: actions, rewards (float32, as the learner's batch has them: scaled and clipped),
terminated and truncated (bool, kept apart), is_active (bool; inactive steps are never sampled),
episode (int64, the column's episode counter: +1 after each terminated or truncated step and at
each cut), rnn_states (float32 `[state]`, the recurrent state the step was acted on with; only when
blocks carry it) and, per row, the observation (`surge.replay.obs_store`).

Continuity: a block continues its column's previous one unless `new_episode[i]` says otherwise (the
worker of that column was replaced, the run was resumed with a fresh sampler). The batch itself
carries no such mark, so the caller must pass it; without it, blocks of a column are assumed
contiguous. At such a cut the column's last stored step is marked truncated, so nothing (an n-step
return, a sequence's recurrent state, a frame stack) runs across it, and its bootstrap falls back to
surge's convention for truncation (below).

Truncation: surge's envs reset automatically (`surge.envs.multi_agent`), so the observation after a
truncated step is the next episode's first one, and the final observation is not stored. A
truncated step is bootstrapped from its OWN observation, as the on-policy learners do
(`surge.learning.returns.bootstrap_truncated_rewards`, rl_games' value bootstrap).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from surge.data.trajectory_batch import TrajectoryBatch
from surge.replay.frames import FrameObs
from surge.replay.obs_store import PlainObs, check_finite_obs, leaves

#: fields every block must carry (besides obs and the terminated/truncated or dones/trunc flags)
STEP_FIELDS = ("actions", "rewards", "is_active")


@dataclass
class Appended:
    """Where `RingStore.append` wrote: `columns` `[n]` int64, their `old_head` and `new_head` `[n]`
    int64 rows (the first step written, and the new pending row), and T (steps per column)."""

    columns: Tensor
    old_head: Tensor
    new_head: Tensor
    T: int


def step_flags(block: Mapping[str, Any] | TrajectoryBatch) -> tuple[Tensor, Tensor]:
    """(terminated, truncated and not terminated) `[T, N]` bool of a block: its
    `terminated`/`truncated` fields (bool or 0/1 float32, as `prepare_batch` gives them), or the
    earlier `dones` (terminated or truncated) and `trunc` (truncated and not terminated) float32.

    Raises:
        KeyError: the block has neither pair.
    """
    if "terminated" in block and "truncated" in block:
        term, trunc = block["terminated"].bool(), block["truncated"].bool()
        return term, trunc & ~term
    if "dones" in block and "trunc" in block:
        dones, trunc = block["dones"] > 0, block["trunc"] > 0
        return dones & ~trunc, trunc
    raise KeyError("a replay block needs terminated and truncated (or prepare_batch's dones and trunc)")


class RingStore:
    """Time-major ring of steps per column; see the module docstring.

    Args:
        capacity: rows per column (the ring holds up to `capacity - 1` steps per column).
        num_columns: N, env-agent streams; a block names its columns in [0, N).
        frame_stack: 0 to store observations whole; F >= 1 to store one frame per row and rebuild
            `[F, H, W]` stacks (`surge.replay.frames`).
    Raises:
        ValueError: capacity < 2 or num_columns < 1.
    """

    def __init__(self, capacity: int, num_columns: int, frame_stack: int = 0):
        if capacity < 2 or num_columns < 1:
            raise ValueError(f"need capacity >= 2 and num_columns >= 1, got {capacity}, {num_columns}")
        self.capacity, self.num_columns = int(capacity), int(num_columns)
        self.obs: PlainObs | FrameObs = (
            FrameObs(capacity, num_columns, frame_stack) if frame_stack else PlainObs(capacity, num_columns)
        )
        N, C = self.num_columns, self.capacity
        self.head = torch.zeros(N, dtype=torch.int64)  # pending row of each column
        self.count = torch.zeros(N, dtype=torch.int64)  # steps stored per column
        self.started = torch.zeros(N, dtype=torch.bool)
        self.next_episode = torch.zeros(N, dtype=torch.int64)
        self.high_water = 0  # rows [0, high_water) have been written in some column
        self.rewards = torch.full((C, N), float("nan"))
        self.terminated = torch.zeros(C, N, dtype=torch.bool)
        self.truncated = torch.zeros(C, N, dtype=torch.bool)
        self.is_active = torch.zeros(C, N, dtype=torch.bool)
        self.episode = torch.full((C, N), -1, dtype=torch.int64)
        self.actions: Tensor | None = None
        self.rnn_states: Tensor | None = None

    # ------------------------------------------------------------------------------------ write

    def append(self, block: dict[str, Any], columns: Tensor, new_episode: Tensor | None = None) -> Appended:
        """Appends a block `[T, n]` to columns `[n]` int64 (distinct, in [0, N)).

        Args:
            block: obs `[T+1, n, ...]` (a dict of them for Dict spaces), actions `[T, n, ...]`,
                rewards `[T, n]` float, is_active `[T, n]` bool, terminated and truncated `[T, n]`
                bool (or `prepare_batch`'s dones and trunc), optionally rnn_states `[T+1, n, state]`.
            columns: the column of each of the n trajectories.
            new_episode: `[n]` bool, True where the trajectory does not continue its column's
                previous block (default: all continue).
        Returns:
            `Appended`, where the block went.
        Raises:
            ValueError: repeated or out-of-range columns, T + 1 + history > capacity, shapes that do
                not agree, or non-finite rewards or floating-point observations (caught where they
                enter, before anything is written).
        """
        cols = torch.as_tensor(columns, dtype=torch.int64).reshape(-1)
        n = cols.numel()
        rewards = block["rewards"].detach().cpu().float()
        T = rewards.shape[0]
        if rewards.shape != (T, n):
            raise ValueError(f"rewards must be [T, {n}] for {n} columns, got {tuple(rewards.shape)}")
        if cols.unique().numel() != n or (n and (cols.min() < 0 or cols.max() >= self.num_columns)):
            raise ValueError(f"columns must be distinct and in [0, {self.num_columns}), got {cols.tolist()}")
        if T + 1 + self.obs.history > self.capacity:
            raise ValueError(f"a block of T={T} steps needs capacity >= {T + 1 + self.obs.history}")
        if not torch.isfinite(rewards).all():
            raise ValueError("non-finite reward in a replay block (surge's rollout worker replaces them)")
        obs = _to_cpu(block["obs"])
        check_finite_obs(obs)
        self.obs.check(obs)
        for name, x, lead in [("obs", leaf, (T + 1, n)) for leaf in leaves(obs)] + [
            ("actions", block["actions"], (T, n)),
            ("is_active", block["is_active"], (T, n)),
        ]:
            if tuple(x.shape[:2]) != lead:
                raise ValueError(f"{name} must be {list(lead)} + ..., got {tuple(x.shape)}")
        term, trunc = step_flags(block)
        term, trunc = term.cpu(), trunc.cpu()
        if n == 0:
            return Appended(cols, cols.clone(), cols.clone(), T)
        new = (
            torch.zeros(n, dtype=torch.bool)
            if new_episode is None
            else torch.as_tensor(new_episode).bool().cpu()
        )
        cut = new & self.started[cols]
        if cut.any():  # nothing runs across a cut: its last stored step ends an episode (truncated)
            cc = cols[cut]
            last = (self.head[cc] - 1) % self.capacity
            self.truncated[last, cc] = True
            self.next_episode[cc] += 1
        stream_start = new | ~self.started[cols]
        old_head = self.head[cols].clone()
        rows = (old_head[None] + torch.arange(T + 1)[:, None]) % self.capacity  # [T+1, n]
        steps, c = rows[:T], cols[None]
        actions = block["actions"].detach().cpu()
        if self.actions is None:
            self.actions = torch.zeros(
                self.capacity, self.num_columns, *actions.shape[2:], dtype=actions.dtype
            )
        self.actions[steps, c] = actions.to(self.actions.dtype)
        self.rewards[steps, c] = rewards
        self.terminated[steps, c] = term
        self.truncated[steps, c] = trunc
        self.is_active[steps, c] = block["is_active"].detach().cpu().bool()
        dones = term | trunc
        ended = dones.long().cumsum(0)
        first_ep = self.next_episode[cols]
        self.episode[steps, c] = first_ep[None] + ended - dones.long()
        self.next_episode[cols] = first_ep + ended[-1]
        if "rnn_states" in block and block["rnn_states"] is not None:
            rnn = block["rnn_states"].detach().cpu().float()
            if self.rnn_states is None:
                self.rnn_states = torch.zeros(self.capacity, self.num_columns, rnn.shape[-1])
            self.rnn_states[rows, c] = rnn
        episode_start = torch.zeros(T + 1, n, dtype=torch.bool)
        episode_start[1:] = dones
        episode_start[0] = stream_start
        self.obs.write(self, rows, cols, obs, episode_start, stream_start)
        self.head[cols] = rows[T]
        self.count[cols] = (self.count[cols] + T).clamp(max=self.capacity - 1)
        self.started[cols] = True
        self.high_water = min(self.capacity, max(self.high_water, int(old_head.max()) + T + 1))
        return Appended(cols, old_head, rows[T].clone(), T)

    # ------------------------------------------------------------------------------------ index math

    def age(self, rows: Tensor, cols: Tensor) -> Tensor:
        """Steps between each row and its column's newest step (0 = newest), int64, same shape."""
        return (self.head[cols] - 1 - rows) % self.capacity

    def written(self, rows: Tensor, cols: Tensor) -> Tensor:
        """Whether each row holds a stored step of its column, bool, same shape."""
        return self.age(rows, cols) < self.count[cols]

    def num_steps(self) -> int:
        """Steps stored over all columns (env steps of those agents, not frames)."""
        return int(self.count.sum())

    def nbytes(self) -> int:
        """Bytes of all stored tensors (the frame or observation store included)."""
        total = self.obs.nbytes()
        for t in (
            self.rewards,
            self.terminated,
            self.truncated,
            self.is_active,
            self.episode,
            self.actions,
            self.rnn_states,
        ):
            if t is not None:
                total += t.numel() * t.element_size()
        return total

    # ------------------------------------------------------------------------------------ save / load

    STATE = (
        "head",
        "count",
        "started",
        "next_episode",
        "rewards",
        "terminated",
        "truncated",
        "is_active",
        "episode",
        "actions",
        "rnn_states",
    )

    def state_dict(self) -> dict[str, Any]:
        """Every tensor and cursor (tensors are shared, not copied)."""
        d = {k: getattr(self, k) for k in self.STATE}
        d.update(
            capacity=self.capacity,
            num_columns=self.num_columns,
            high_water=self.high_water,
            obs=self.obs.state_dict(),
        )
        return d

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Raises ValueError when the saved ring has another shape."""
        if (state["capacity"], state["num_columns"]) != (self.capacity, self.num_columns):
            raise ValueError(
                f"saved replay is [{state['capacity']}, {state['num_columns']}], this one [{self.capacity}, {self.num_columns}]"
            )
        for k in self.STATE:
            setattr(self, k, state[k])
        self.high_water = int(state["high_water"])
        self.obs.load_state_dict(state["obs"])


def _to_cpu(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _to_cpu(v) for k, v in tree.items()}
    return tree.detach().cpu()
