"""The rollout worker: steps its envs, writes what they return into trajectory slots, and hands
finished trajectories on. Placement-agnostic: the serial runner calls it in-process, the async
engine runs it in a process of its own.

A worker owns `num_envs_per_worker` envs split into `worker_num_splits` groups; the agents of one
split step in lockstep, so a split has one time index t and one slot per agent. The protocol per
split is: `policy_request(split)` gives `(slots, t)` whose obs inference must act on and the policies
that act on them; once each of those policies' inference has written actions at `(slots, t)`,
`advance(split)` steps the envs and returns the finished trajectories (if t reached the rollout
length), which `hand_over` routes: each trajectory (slot) to the learner of every learning policy
that acted in it (`surge.data.routing`).

With several policies, each agent has a policy for its current episode (`PolicyMapper`), written
into `policy_id[slot, t]` before inference reads the step, and re-drawn when its episode ends.

Non-finite env outputs are replaced by 0 and their agents' steps marked inactive
(`surge.sampling.observations`); an env that raises in `step` is rebuilt (`surge.sampling.env_faults`).
The worker's state for exact resume is `surge.sampling.worker_state`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor

from surge.cfg.config import Config
from surge.data.routing import OwnSlots, route_block
from surge.data.trajectory import TrajectoryBuffers, tree_map
from surge.envs.batched import BatchedInfo
from surge.envs.multi_agent import SingleAgentAsMultiAgent
from surge.errors import EnvError
from surge.sampling.env_actions import BoxActionMap
from surge.sampling.env_faults import rebuild_env
from surge.sampling.objective import TRUE_REWARD
from surge.sampling.obs_writer import ObsWriter
from surge.sampling.observations import as_array_tree, cat_obs
from surge.sampling.policy_mapping import PolicyMapper
from surge.sampling.shaping import WorkerShaping
from surge.sampling.split_state import EpisodeStats, SplitState, note_episode
from surge.sampling.worker_reset import reset_worker
from surge.sampling.worker_state import check_worker_state, load_worker_state, worker_state_dict


class RolloutWorker:
    """Steps `len(env_splits) × envs_per_split` envs for one policy's trajectory buffers.

    Args:
        cfg: the run's config (rollout, seed, decorrelation flags).
        worker_idx: index of this worker (seeds and logs).
        env_splits: the envs of each split (multi-agent envs, see `surge.envs.multi_agent`).
        buffers: the trajectory buffers to write into (the worker writes through numpy views of
            them: move them to shared memory before building it, not after).
        slot_pools: where each split's fresh slots come from: one object per split whose
            `get(n)` returns n free slots `[n]` int64 or None and whose `hand_over(slots,
            route)` passes filled ones on (`surge.data.block_pool.OwnerBlocks`).
        policy_mapper: which policy acts for each agent (None: policy 0 for all).
        has_learners: False when nothing trains on the trajectories (the dummy sampler,
            `--sampler_only`): a finished block is free again at once.
        learning: the policies that have a learner (`surge.cfg.policy_roles.learning_policies`;
            None: all); a frozen policy's trajectories go to no learner (`surge.data.routing`).
        env_factory: builds a replacement env object for one that raised in `step` (None: such an
            exception propagates).
    Raises:
        EnvError: when an env returns something the buffers cannot hold (wrong shape or dtype).
    """

    def __init__(
        self,
        cfg: Config,
        worker_idx: int,
        env_splits: list[list[Any]],
        buffers: TrajectoryBuffers,
        slot_pools: list[Any],
        policy_mapper: PolicyMapper | None = None,
        has_learners: bool = True,
        env_factory: Callable[[], Any] | None = None,
        learning: list[int] | None = None,
    ):
        self.has_learners = has_learners
        self.learning = list(range(cfg.num_policies)) if learning is None else list(learning)
        self.env_factory = env_factory
        self.env_steps = 0  # env steps since the last `pop_env_steps`
        self.env_faults = 0  # env.step calls that raised since the last `pop_env_faults`
        self.rebuilds = 0  # envs this worker rebuilt so far (each rebuilt env gets its own seed)
        self.last_env_fault = ""  # the latest one's exception, one line
        self.fault_streaks: dict[tuple[int, int], int] = {}  # (split, env) -> faults in a row
        self.cfg, self.worker_idx = cfg, worker_idx
        # the per-episode statistic PBT selects on, when it is not the return (None: none to read)
        self.objective_name: str | None = (
            cfg.pbt_target_objective if cfg.with_pbt and cfg.pbt_target_objective != TRUE_REWARD else None
        )
        self.buffers, self.slot_pools = buffers, slot_pools
        # numpy views of the buffers the worker writes every step: a numpy assignment costs a
        # fraction of a tensor's (whose dispatch alone is a few microseconds), several per step
        self._np = {
            name: tree_map(lambda x: x.numpy(), getattr(buffers, name))
            for name in (
                "obs",
                "actions",
                "rewards",
                "terminated",
                "truncated",
                "is_active",
                "rnn_states",
                "policy_id",
            )
        }
        self.mapper = policy_mapper if policy_mapper is not None and policy_mapper.num_policies > 1 else None
        self.shaping = WorkerShaping(env_splits[0][0].num_agents)  # each policy's reward shaping (PBT)
        self.rollout = cfg.rollout
        env0 = env_splits[0][0]
        self.obs_space, self.action_space = env0.observation_space, env0.action_space
        self.num_agents = env0.num_agents
        self.obs_writer = ObsWriter(self._np["obs"], self.obs_space, cfg.env)
        self.is_box_action = isinstance(self.action_space, gym.spaces.Box)
        self.box_action_map = (
            BoxActionMap(self.action_space.low, self.action_space.high, cfg.clip_actions, cfg.rescale_actions)
            if self.is_box_action
            else None
        )
        # --zero_rnn_on_done=False: the recurrent state carries over episode ends
        self.zero_rnn_on_done = bool(cfg.zero_rnn_on_done)
        self.is_batched = bool(getattr(env0, "is_batched", False))
        self.splits: list[SplitState] = []
        for s_idx, (envs, pool) in enumerate(zip(env_splits, slot_pools, strict=True)):
            slots = pool.get(len(envs) * self.num_agents)
            if slots is None:
                raise RuntimeError("not enough trajectory slots to start a rollout worker")
            first_env = (worker_idx * len(env_splits) + s_idx) * len(envs)
            self.splits.append(SplitState(envs, slots, num_agents=self.num_agents, first_env=first_env))
            self._claim_slots(self.splits[-1])
        self.nonfinite_rewards = 0  # agent steps whose reward was NaN or ±inf (see the module docstring)

    # ---------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Resets every env and writes the first observations at t = 0 (`surge.sampling.worker_reset`:
        seeds, decorrelation)."""
        reset_worker(self)

    # ---------------------------------------------------------------------------------------
    def _map_policies(self, split: SplitState, agents: np.ndarray) -> None:
        """Draws the policy of each agent in the boolean mask `agents` `[N]` for its next episode."""
        mapper, n_ag = self.mapper, self.num_agents
        assert mapper is not None
        for j in np.flatnonzero(agents).tolist():
            env_index = split.first_env + j // n_ag
            split.agent_policy[j] = mapper.policy_for(env_index, j % n_ag, int(split.agent_episode[j]))
        split.policies = sorted(set(split.agent_policy.tolist()))
        if self.shaping.schemes:  # each agent's env takes its new policy's reward shaping
            for j in np.flatnonzero(agents).tolist():
                self._shape(split, j)

    def set_policy_reward_shaping(self, policy_id: int, scheme: dict) -> None:
        """Policy `policy_id`'s reward-shaping scheme from now on (`surge.sampling.shaping`):
        set at once on the envs of the agents playing it, and on each agent's env when it starts
        an episode for it."""
        self.shaping.set(policy_id, scheme)
        for split in self.splits:
            for j in range(split.n):
                if (int(split.agent_policy[j]) if self.mapper is not None else 0) == policy_id:
                    self._shape(split, j)

    def _shape(self, split: SplitState, j: int) -> None:
        p = int(split.agent_policy[j]) if self.mapper is not None else 0
        try:
            self.shaping.apply(split.envs, id(split), j, p)
        except EnvError:  # a multi-agent env before its first reset: set at the agent's next episode
            pass

    def policy_request(self, split_idx: int) -> tuple[Tensor, int]:
        """The `(slots [N] int64, t)` whose observations wait for actions; with several policies,
        also writes which policy acts for each at `policy_id[slots, t]`."""
        split = self.splits[split_idx]
        if self.mapper is not None:
            self.buffers.policy_id[split.index, split.t] = split.agent_policy
        return split.slots, split.t

    def request_policies(self, split_idx: int) -> list[int]:
        """The policies that act for the split's agents at its current step (each one's inference
        must answer before `advance`)."""
        return self.splits[split_idx].policies

    def hand_over(self, split_idx: int, slots: Tensor) -> dict[int, OwnSlots]:
        """Routes the finished trajectories `slots` (from `advance`): each to the learner of every
        learning policy that acted in it at an active step (`surge.data.routing`), and marks them
        held by those learners.

        Returns:
            `{policy: its slots}` (None: all of `slots`, which are then contiguous): deliver each
            share to its learner. Empty when no learner takes any (the slots are free again at
            once).
        """
        split = self.splits[split_idx]
        assert split.slots is slots, "hand over a split's rollout before `start_next_rollout`"
        if not self.has_learners:
            route: dict[int, OwnSlots] = {}
        elif self.mapper is None:  # one policy acted throughout: all of them, or nobody
            route = {0: None} if 0 in self.learning else {}
        else:
            idx = split.np_index
            route = route_block(
                split.np_slots, self._np["policy_id"][idx], self._np["is_active"][idx], self.learning
            )
        if not isinstance(split.index, slice):  # None stands for a contiguous block only
            route = {p: tuple(split.np_slots.tolist()) if own is None else own for p, own in route.items()}
        self.slot_pools[split_idx].hand_over(slots, route)
        return route

    def _env_actions(self, split: SplitState) -> np.ndarray:
        # a numpy view, not a tensor index: the first torch operation after the envs stepped costs
        # about 60 µs (its code and data evicted by the env's own processes), numpy's a few
        actions = self._np["actions"][split.np_index, split.t]
        if self.box_action_map is not None:  # clipped and/or rescaled (surge.sampling.env_actions)
            actions = self.box_action_map(actions).reshape(-1, *self.action_space.shape)
        return actions

    def advance(self, split_idx: int) -> Tensor | None:
        """Steps the envs of a split with the actions written at `(slots, t)`.

        Returns:
            the slots `[N]` of the trajectories this step finished (t reached `rollout`), or None.
            They are no longer this worker's: pass them to the learner, which returns them to the
            pool; then call `start_next_rollout(split_idx)` before the split's next request.
        """
        split = self.splits[split_idx]
        actions = self._env_actions(split)
        t = split.t
        if self.is_batched:
            obs_all, rewards, terminated, truncated, active = self._step_batched(split, actions)
        else:
            obs_all, rewards, terminated, truncated, active = self._step_envs(split, actions)
        buf, idx = self._np, split.np_index
        # one numpy reduction (NaN and inf propagate into a float64 sum): torch's dispatch costs more
        if not math.isfinite(rewards.sum(dtype=np.float64)):
            finite = np.isfinite(rewards)
            self.nonfinite_rewards += int((~finite).sum())
            rewards = np.where(finite, rewards, 0.0).astype(np.float32)
            active = active & finite
        if split.bad_obs is not None:  # this step acted on a non-finite observation (replaced by 0)
            active = active & ~split.bad_obs
            split.bad_obs = None
        buf["rewards"][idx, t] = rewards
        buf["terminated"][idx, t] = terminated
        buf["truncated"][idx, t] = truncated
        buf["is_active"][idx, t] = active
        if self.is_batched:
            self.obs_writer.put(split, t + 1, as_array_tree(obs_all))
        else:
            self.obs_writer.write(split, t + 1, obs_all)
        done = terminated | truncated
        if done.any():
            split.random_start[done] = False
            if self.zero_rnn_on_done:
                buf["rnn_states"][split.np_slots[done], t + 1] = 0.0
            if self.mapper is not None:
                split.agent_episode[done] += 1
                self._map_policies(split, done)
        split.t = t + 1
        return split.slots if split.t == self.rollout else None

    def _step_envs(self, split: SplitState, actions: np.ndarray):
        """Steps each multi-agent env of the split; returns obs list and per-agent arrays."""
        if self.num_agents == 1:
            return self._step_single_agent_envs(split, actions)
        return self._step_multi_agent_envs(split, actions)

    def _step_multi_agent_envs(self, split: SplitState, actions: np.ndarray):
        """`_step_envs`'s general loop: each env's `step` with its agents' actions as a list."""
        n_ag, n = self.num_agents, split.n
        obs_all: list = []
        rewards = np.empty(n, dtype=np.float32)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        active = np.ones(n, dtype=bool)
        streaks = self.fault_streaks
        for e_idx, env in enumerate(split.envs):
            lo = e_idx * n_ag
            try:
                obs, rew, term, trunc, infos = env.step(list(actions[lo : lo + n_ag]))
            except Exception as e:  # noqa: BLE001 - any env error is a fault (module docstring)
                obs_all.extend(self._replace_env(split, e_idx, e))
                rewards[lo : lo + n_ag] = 0.0
                truncated[lo : lo + n_ag] = True
                active[lo : lo + n_ag] = False
                self.env_steps -= 1  # no step happened
                continue
            if streaks:
                streaks.pop((self.splits.index(split), e_idx), None)
            obs_all.extend(obs)
            rewards[lo : lo + n_ag] = rew
            terminated[lo : lo + n_ag] = term
            truncated[lo : lo + n_ag] = trunc
            for a, info in enumerate(infos):
                if not info:
                    continue
                if info.get("is_active", True) is False:
                    active[lo + a] = False
                note_episode(split, lo + a, info, self.mapper is not None, self.objective_name)
        self.env_steps += len(split.envs)
        return obs_all, rewards, terminated, truncated, active

    def _step_single_agent_envs(self, split: SplitState, actions: np.ndarray):
        """`_step_envs` for envs of one agent each: the same results, with a gymnasium env's own
        step per env (`SingleAgentAsMultiAgent.step_one`) and scalar writes, where the general
        loop builds and slices per-agent lists, a cost that shows on cheap envs (measured in
        docs/benchmarks.md). Other envs of one agent go through their `step`."""
        n = split.n
        obs_all: list = [None] * n
        rewards = np.empty(n, dtype=np.float32)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        active = np.ones(n, dtype=bool)
        streaks = self.fault_streaks
        acts = list(actions)  # numpy rows or scalars, as `step(list(actions[e : e + 1]))` passes them
        for e, env in enumerate(split.envs):
            try:
                if type(env) is SingleAgentAsMultiAgent:
                    obs, rew, term, trunc, info = env.step_one(acts[e])
                else:
                    o, r, te, tr, infos = env.step([acts[e]])
                    obs, rew, term, trunc, info = o[0], r[0], te[0], tr[0], infos[0]
            except Exception as err:  # noqa: BLE001 - any env error is a fault (module docstring)
                obs_all[e] = self._replace_env(split, e, err)[0]
                rewards[e] = 0.0
                truncated[e] = True
                active[e] = False
                self.env_steps -= 1  # no step happened
                continue
            if streaks:
                streaks.pop((self.splits.index(split), e), None)
            obs_all[e] = obs
            rewards[e] = rew
            terminated[e] = term
            truncated[e] = trunc
            if info:
                if info.get("is_active", True) is False:
                    active[e] = False
                note_episode(split, e, info, self.mapper is not None, self.objective_name)
        self.env_steps += len(split.envs)
        return obs_all, rewards, terminated, truncated, active

    def _replace_env(self, split: SplitState, e_idx: int, error: Exception) -> Any:
        """`surge.sampling.env_faults.rebuild_env` of env `e_idx` of `split`, which raised `error`:
        the new env's first observations.

        Raises:
            EnvError: see there.
        """
        return rebuild_env(self, split, e_idx, error)

    def pop_env_faults(self) -> tuple[int, str]:
        """`(count, last)`: env.step calls that raised since the last call (each env rebuilt and
        its episode ended) and the latest exception as one line."""
        out = (self.env_faults, self.last_env_fault)
        self.env_faults = 0
        return out

    def _step_batched(self, split: SplitState, actions: np.ndarray):
        """Steps each batched env of the split (see `surge.envs.batched`); arrays end to end."""
        n_ag = self.num_agents
        parts = []
        for e, env in enumerate(split.envs):
            try:
                parts.append(env.step(actions[e * n_ag : (e + 1) * n_ag]))
            except Exception as err:  # noqa: BLE001 - a fault: every sub-env's episode ends here
                obs = as_array_tree(self._replace_env(split, e, err))
                zeros = np.zeros(n_ag, dtype=np.float32)
                inactive = np.ones(n_ag, dtype=bool)
                parts.append((obs, zeros, ~inactive, inactive, BatchedInfo(inactive=inactive)))
                self.env_steps -= n_ag  # no step happened
                continue
            if self.fault_streaks:
                self.fault_streaks.pop((self.splits.index(split), e), None)
        for e, (_, _, _, _, info) in enumerate(parts):
            split.episodes.extend(
                EpisodeStats(r, length, int(split.agent_policy[e * n_ag + i]))
                for i, r, length in info.episodes
            )
        self.env_steps += len(split.envs) * n_ag  # one call steps every sub-env
        cat = np.concatenate
        if len(parts) == 1:
            obs, rew, term, trunc, info = parts[0]
            active = ~info.inactive if info.inactive is not None else np.ones(n_ag, dtype=bool)
            return obs, rew, term, trunc, active
        obs = cat_obs([p[0] for p in parts])
        active = cat(
            [~p[4].inactive if p[4].inactive is not None else np.ones(n_ag, dtype=bool) for p in parts]
        )
        return obs, cat([p[1] for p in parts]), cat([p[2] for p in parts]), cat([p[3] for p in parts]), active

    def start_next_rollout(self, split_idx: int) -> bool:
        """Moves a split whose rollout finished to fresh slots (carrying the bootstrap step over).

        Returns:
            False when its pool has no free slots yet (the learner still holds them): call again later.
        """
        split = self.splits[split_idx]
        new_slots = self.slot_pools[split_idx].get(len(split.slots))
        if new_slots is None:
            return False
        self.buffers.start_next(split.slots, new_slots)
        split.set_slots(new_slots)
        split.t = 0
        return True

    def pop_episodes(self) -> list[EpisodeStats]:
        """Episodes finished since the last call."""
        out: list[EpisodeStats] = []
        for split in self.splits:
            out.extend(split.episodes)
            split.episodes.clear()
        return out

    def pop_nonfinite(self) -> tuple[int, int]:
        """`(rewards, observations)`: agent steps with a non-finite reward, and with a non-finite
        observation, since the last call (each replaced by 0 and not trained on)."""
        out = (self.nonfinite_rewards, self.obs_writer.nonfinite)
        self.nonfinite_rewards = self.obs_writer.nonfinite = 0
        return out

    def pop_env_steps(self) -> int:
        """Env steps since the last call: calls of `env.step` of each (sub-)env, not frames."""
        total, self.env_steps = self.env_steps, 0
        return total

    def state_dict(self) -> dict[str, Any]:
        """`surge.sampling.worker_state.worker_state_dict` of this worker (for exact resume).

        Raises:
            EnvStateUnsupported: an env's state cannot be saved (the message says which and why).
        """
        return worker_state_dict(self)

    def check_state_dict(self, state: dict[str, Any]) -> None:
        """`surge.sampling.worker_state.check_worker_state`: would `load_state_dict(state)` restore
        this worker's envs (changing nothing)?

        Raises:
            ValueError, EnvStateRefused: see there.
        """
        check_worker_state(self, state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """`surge.sampling.worker_state.load_worker_state`: restores what `state_dict` saved,
        instead of `reset()`.

        Raises:
            ValueError, EnvStateRefused: as `check_state_dict` (checked before anything changes).
        """
        load_worker_state(self, state)

    def _claim_slots(self, split: SplitState) -> None:
        """Writes the global actor id of each agent of `split` at its slot (`buffers.actor_ids`, what
        inference passes as `ActContext.actor_ids`): `first_env * num_agents + j` for the split's
        agent j (env-major, agents within an env); `start_next` carries them to the next slots."""
        first = split.first_env * self.num_agents
        self.buffers.actor_ids[split.index] = torch.arange(first, first + split.n, dtype=torch.int64)

    def close(self) -> None:
        for split in self.splits:
            for env in split.envs:
                env.close()
