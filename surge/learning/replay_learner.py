"""What every replay (off-policy) learner shares: `ReplayLearnerBase`, the generic half of DQN, SAC,
TD3, DDPG (issue 20); an algorithm writes `update` and, if it wants, `make_replay`.

API (stable; additions only):

- `ReplayParams`: the common flags of a replay algorithm's section (`--replay_size`,
  `--learning_starts`, `--replay_ratio`, `--n_step_return`, `--prioritized_replay`, `--pri_alpha`,
  `--pri_beta_init`, `--pri_beta_steps`, `--save_replay_buffer`); an algorithm's params dataclass
  subclasses it (`@dataclass class DQNParams(ReplayParams)`), and calls `super().validate()`.
- `ReplayLearnerBase(LearnerBase)`, built by the engine as any learner
  (`make_learner(cfg, model, buffers, device, policy_id, learner_modules=...)`):
  - `params`: the run's section (`algo_params(cfg, self.params_type)`; set `params_type` to the
    subclass of `ReplayParams` the algorithm declares).
  - `make_replay()` (overridable): a `UniformReplay`, or a `PrioritizedReplay` with
    `--prioritized_replay`, of `--replay_size` transitions over one column per actor.
  - `observe(b)`: appends a block of `prepare_batch` (which adds `actor_ids` `[N]`, the columns) to
    `self.replay`; steps another policy acted on are stored inactive (never sampled).
  - `train_replay(env_frames)`: the updates due, `replay_ratio * (steps - learning_starts)` in all;
    each samples `batch_size` transitions (`self.sample()`), calls `update(samples)`, increments
    `policy_version` and, with a prioritized replay, sets the sampled steps' priorities to the
    `samples.td_errors` `[B]` that `update` wrote there. Returns the mean statistics, or None
    when no update was due.
  - `update(samples) -> dict[str, float]` (abstract): one gradient update. `samples` is
    `UniformReplay.sample`'s `TransitionSample` (`surge.replay.samples`: fields by attribute,
    or by name as `samples["obs"]`) on `self.device` with `is_weights` `[B]` float32 (ones when
    uniform) and `lag` `[B]` float32 (policy versions).
  - `env_steps`: transitions this learner stored (env steps of its policy; agent steps with
    multi-agent envs), the unit of `--learning_starts`, `--replay_ratio`, beta's annealing.
  - `state_dict()` / `load_state_dict()`: `LearnerBase`'s plus the counters; with
    `--save_replay_buffer` the replay is written beside the checkpoint (`replay_buffer_v*.pth`, one
    file, the latest) and reloaded on resume.

The replay ratio is rlpyt's: gradient updates per env step, one primary form. Stable-Baselines3's
`train_freq` (env steps per env between updates) and `gradient_steps` (updates each time) with
`n_envs` envs are `replay_ratio = gradient_steps / (train_freq * n_envs)`: rl-zoo3's CartPole DQN
(train_freq 256, gradient_steps 128, 1 env) is `--replay_ratio=0.5`. surge runs the updates due
after each block it observes (a rollout of one split's envs) instead of in bursts of
`gradient_steps`, so updates are spread more evenly over the same number of env steps.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor

from surge.cfg.config import Config, algo_params, param
from surge.data.trajectory import TrajectoryBuffers, tree_map
from surge.data.trajectory_batch import TrajectoryBatch
from surge.envs.registry import find_family
from surge.errors import ConfigError
from surge.learning.base import Batch, LearnerBase
from surge.learning.feed import Feed
from surge.replay.obs_store import leaves
from surge.replay.persist import ReplayFileRefused, load_replay, replay_file_in, save_replay
from surge.replay.prioritized import PrioritizedReplay
from surge.replay.ring import step_flags
from surge.replay.uniform import UniformReplay

log = logging.getLogger("surge")


@dataclass
class ReplayParams:
    """Flags every replay algorithm shares (subclass it for an algorithm's own section)."""

    replay_size: int = param(
        1_000_000, "Replay capacity in transitions (env-agent steps) over all actors (SB3's buffer_size)."
    )
    learning_starts: int = param(
        1000, "Env steps of this policy stored in the replay before the first gradient update."
    )
    replay_ratio: float = param(
        0.25,
        "Gradient updates per env step once learning started (SB3: gradient_steps / (train_freq * "
        "n_envs); rl-zoo3's CartPole DQN is 128 / 256 = 0.5).",
    )
    n_step_return: int = param(1, "n of the n-step return (1 = one-step TD).")
    prioritized_replay: bool = param(False, "Prioritized replay (Schaul et al. 2016) instead of uniform.")
    pri_alpha: float = param(0.6, "Prioritized replay: priority exponent alpha (eq. 1).")
    pri_beta_init: float = param(
        0.4, "Prioritized replay: importance-weight exponent beta at the start (eq. 2)."
    )
    pri_beta_steps: int = param(
        1_000_000, "Prioritized replay: env steps over which beta is annealed linearly to 1."
    )
    replay_frame_storage: bool = param(
        True,
        "Where the env family's observations are frame stacks (atari_: --env_framestack), store each "
        "frame once and rebuild the stacks at sampling (about 1/F of the memory; rlpyt's frame "
        "buffers); False: store whole observations. Other families store them whole either way.",
    )
    save_replay_buffer: bool = param(
        False,
        "Save the replay with each checkpoint (one file, replay_buffer_v*.pth in checkpoint_p*/) and load "
        "it on resume, so a serial resume continues exactly (SB3's save_replay_buffer).",
    )

    def validate(self) -> None:
        """Raises `ConfigError` naming a flag out of range (before any process starts)."""
        checks = [
            ("replay_size", self.replay_size >= 1, "e.g. --replay_size=100000."),
            ("learning_starts", self.learning_starts >= 0, "use 0 or more env steps."),
            (
                "replay_ratio",
                math.isfinite(self.replay_ratio) and self.replay_ratio > 0,
                "e.g. --replay_ratio=0.25.",
            ),
            ("n_step_return", self.n_step_return >= 1, "e.g. --n_step_return=3."),
            ("pri_alpha", 0.0 <= self.pri_alpha <= 1.0, "use a value in [0, 1], e.g. 0.6."),
            ("pri_beta_init", 0.0 <= self.pri_beta_init <= 1.0, "use a value in [0, 1], e.g. 0.4."),
            ("pri_beta_steps", self.pri_beta_steps >= 1, "use 1 or more env steps."),
        ]
        for name, ok, fix in checks:
            if not ok:
                raise ConfigError(name, f"is out of range: {getattr(self, name)!r}.", fix)


def replay_frame_stack(cfg: Config, params: ReplayParams) -> int:
    """F, the frames per observation that a replay stores one frame per step of
    (`surge.replay.frames`): with `--replay_frame_storage` and an env family that declares its
    observations frame stacks of F > 1 frames (`EnvFamily.frame_stack`); else 0 (whole observations).

    Raises:
        ConfigError: `cfg.env` names no env family (`find_family`; a parsed config has passed it)."""
    if not params.replay_frame_storage:
        return 0
    family = find_family(cfg.env)
    frames = int(family.frame_stack(cfg)) if family.frame_stack is not None else 0
    return frames if frames > 1 else 0


def replay_obs_bytes(cfg: Config, params: ReplayParams, obs_space: gym.Space) -> int:
    """Bytes one stored step's observation takes in the replay: the whole observation's, or with
    frame storage (`replay_frame_stack`) one frame's plus its one-byte history (`FrameObs`).

    Raises:
        ConfigError: as `replay_frame_stack`."""
    spaces = obs_space.spaces.values() if isinstance(obs_space, gym.spaces.Dict) else [obs_space]
    frames = replay_frame_stack(cfg, params)
    total = 0
    for sp in spaces:
        shape: tuple[int, ...] = tuple(sp.shape or ())
        size = math.prod(shape) * np.dtype(sp.dtype).itemsize
        total += size // frames + 1 if frames and shape and shape[0] == frames else size
    return total


def infer_num_columns(cfg: Config, buffers: TrajectoryBuffers) -> int:
    """The run's acting agents (`num_workers * num_envs_per_worker * num_agents`, one replay column
    each), recovered from the REPLAY block pool's size: `num_slots = owners * blocks_per_split *
    envs_per_split * num_agents` (`surge.learning.feed.Feed.num_columns`).

    Raises:
        ValueError: the buffers are not sized as a REPLAY pool of this config.
    """
    return Feed.REPLAY.num_columns(cfg, buffers.num_slots)


class ReplayLearnerBase(LearnerBase):
    """The generic replay learner (see the module docstring).

    Args: as `LearnerBase`, plus num_columns: replay columns (default: the run's acting agents,
    `infer_num_columns`); actor ids must be below it.
    """

    #: the algorithm's params dataclass (a subclass of `ReplayParams`)
    params_type: type[ReplayParams] = ReplayParams
    #: `observe` stores each block's rnn_states `[T+1, N, state]` with its steps (sequence replay)
    stores_rnn_states: bool = False
    #: every optimizer (actor, critics, a temperature) follows the learning rate and its schedule,
    #: as Stable-Baselines3's SAC/TD3; otherwise the policy's optimizer ("model") alone
    every_optimizer_follows_lr: bool = False

    def __init__(self, *args: Any, num_columns: int | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.params = algo_params(self.cfg, self.params_type)
        self.num_columns = num_columns or infer_num_columns(self.cfg, self.buffers)
        #: frames per observation stored one frame per step (`replay_frame_stack`), 0: whole
        self.frame_stack = replay_frame_stack(self.cfg, self.params)
        self.replay: UniformReplay = self.make_replay()
        self._report_storage()
        C = self.replay.ring.capacity
        #: behavior policy_version of each stored step `[capacity, columns]` (the lag statistic)
        self.versions = torch.zeros(C, self.num_columns, dtype=torch.int64)
        self.env_steps = 0  # transitions stored (this policy's active steps)
        self.updates = 0  # gradient updates run by train_replay (skipped ones included)
        # counters when a resume started from an empty replay (no saved one): learning starts
        # again after `learning_starts` new steps
        self._base_steps = self._base_updates = 0
        self.generator = torch.Generator().manual_seed(int(self.cfg.seed or 0) * 1000 + self.policy_id)

    # ------------------------------------------------------------------------------ replay
    def make_replay(self) -> UniformReplay:
        """The replay: `--replay_size` transitions over `num_columns` columns (rows per column
        `ceil(replay_size / num_columns) + 1`, the pending row), n-step returns with the policy's
        gamma; prioritized with `--prioritized_replay`."""
        p = self.params
        frames = self.frame_stack
        capacity = -(-p.replay_size // self.num_columns) + 1 + max(frames - 1, 0)
        capacity = max(capacity, self.cfg.rollout + p.n_step_return + 2 + max(frames - 1, 0))
        if p.prioritized_replay:
            return PrioritizedReplay(
                capacity,
                self.num_columns,
                p.n_step_return,
                self.hp.gamma,
                frame_stack=frames,
                alpha=p.pri_alpha,
                beta0=p.pri_beta_init,
                beta_steps=p.pri_beta_steps,
            )
        return UniformReplay(capacity, self.num_columns, p.n_step_return, self.hp.gamma, frame_stack=frames)

    def _report_storage(self) -> None:
        """Says once in the run's log how the replay stores observations (`--replay_frame_storage`)."""
        frames, p = self.frame_stack, self.params
        if frames:
            how = (
                f"frame-based (each of the {frames} stacked frames stored once, --replay_frame_storage=True)"
            )
        elif p.replay_frame_storage:
            how = f"whole observations (--replay_frame_storage=True has no effect: env {self.cfg.env!r} declares no frame stacks)"
        else:
            how = "whole observations (--replay_frame_storage=False)"
        log.info(
            "Replay of policy %d: %d transitions over %d columns, %s.",
            self.policy_id,
            p.replay_size,
            self.num_columns,
            how,
        )

    def prepare_batch(self, slots: Tensor) -> TrajectoryBatch:
        """`LearnerBase.prepare_batch` plus actor_ids `[N]` int64 (the slots' actors: replay columns)."""
        b = super().prepare_batch(slots)
        b.actor_ids = self.buffers.actor_ids[slots].clone()
        return b

    def _new_episode(self, b: Batch, cols: Tensor) -> Tensor:
        """`[n]` bool: the block does not continue the column's stored stream: its first
        observation differs from the column's pending one (the envs were reset: a resumed run, or
        a rollout worker replaced while the run goes on). A block that continues its stream starts
        with exactly that observation (`TrajectoryBuffers.start_next` copies it), so every block
        is checked; the stored stream is then cut (its last step truncated) rather than joined
        to another episode's steps in an n-step window."""
        ring = self.replay.ring
        out = torch.zeros(len(cols), dtype=torch.bool)
        check = ring.started[cols]
        if bool(check.any()):
            idx = torch.nonzero(check).reshape(-1)
            stored = leaves(ring.obs.read(ring.head[cols[idx]], cols[idx]))
            first = leaves(tree_map(lambda x: x[0, idx].cpu(), b["obs"]))
            same = torch.ones(len(idx), dtype=torch.bool)
            for s, f in zip(stored, first, strict=True):
                same &= (s.reshape(len(idx), -1) == f.reshape(len(idx), -1).to(s.dtype)).all(1)
            out[idx] = ~same
        return out

    def observe(self, b: Batch) -> None:
        """Appends a block of `prepare_batch` (`[T, N]`, obs `[T+1, N, ...]`, actor_ids `[N]`) to
        the replay, one column per actor; another policy's steps are stored inactive. The block's
        terminated and truncated flags (or the earlier dones/trunc spelling: `step_flags`) are
        stored apart: a truncated step is bootstrapped at sampling, a terminated one is not.
        The block is read by name, so a dict of `prepare_batch`'s names (and the earlier
        dones/trunc, without rnn_states where none are stored) is taken as well: once per block.

        Raises:
            ValueError: an actor id outside [0, num_columns); non-finite rewards (`RingStore`).
        """
        cols = b["actor_ids"].cpu()
        if bool((cols < 0).any() | (cols >= self.num_columns).any()):
            raise ValueError(f"actor ids {cols.tolist()} outside the replay's {self.num_columns} columns")
        own = b["is_active"]
        if "acting_policy" in b:
            own = own & (b["acting_policy"] == self.policy_id)
        term, trunc = step_flags(b)  # `[T, N]` bool, truncated and not terminated
        block = {
            "obs": tree_map(lambda x: x.cpu(), b["obs"]),
            "actions": b["actions"].cpu(),
            "rewards": b["rewards"].cpu(),
            "terminated": term.cpu(),
            "truncated": trunc.cpu(),
            "is_active": own.cpu(),
        }
        if self.stores_rnn_states:
            block["rnn_states"] = b["rnn_states"].cpu()
        a = self.replay.append(block, cols, self._new_episode(b, cols))
        rows = (a.old_head[None] + torch.arange(a.T)[:, None]) % self.replay.ring.capacity
        self.versions[rows, a.columns[None].expand_as(rows)] = b["behavior_version"].cpu()
        self.env_steps += int(own.sum())

    def updates_due(self) -> int:
        """Updates owed now: `floor(replay_ratio * (env_steps - learning_starts)) - updates`
        (both counted from the resume when it started from an empty replay)."""
        p = self.params
        steps, updates = self.env_steps - self._base_steps, self.updates - self._base_updates
        if steps < max(p.learning_starts, 1):
            return 0
        return max(0, math.floor(p.replay_ratio * (steps - p.learning_starts)) - updates)

    def sample(self) -> Any:
        """`batch_size` transitions from the replay on `self.device`: a `TransitionSample` with
        is_weights `[B]` and lag `[B]` (see the module docstring); an algorithm with its own
        replay (R2D2's sequences) gives its own sample type, with `indices`, `lag` and
        `td_errors` fields as `train_replay` reads them."""
        bs = self.cfg.batch_size
        if isinstance(self.replay, PrioritizedReplay):
            s = self.replay.sample(bs, self.generator, env_steps=self.env_steps)
        else:
            s = self.replay.sample(bs, self.generator)  # is_weights 1
        s.lag = (self.policy_version - self.versions[s.rows, s.columns]).float()
        return s.map(lambda x: x.to(self.device, non_blocking=True))

    @property
    def update_number(self) -> int:
        """The number of the update running now, from 1 (`updates` counts the finished ones)."""
        return self.updates + 1

    def set_hyperparams(self, values: dict[str, Any]) -> dict[str, tuple[float, float]]:
        changed = super().set_hyperparams(values)
        if self.every_optimizer_follows_lr:
            self._set_lr(self.hp.learning_rate)
        return changed

    def _set_lr(self, lr: float) -> None:
        if not self.every_optimizer_follows_lr:
            super()._set_lr(lr)
            return
        for opt in self.optimizers.values():
            for group in opt.param_groups:
                group["lr"] = lr

    def update(self, samples: Any) -> dict[str, float]:
        """One gradient update on `samples` (`sample`'s; see the module docstring); sets
        `samples.td_errors` `[B]` for a prioritized replay; returns its statistics. `train_replay` increments
        `policy_version` after it unless `apply_gradients` did (`last_step_skipped` kept)."""
        raise NotImplementedError

    def train_replay(self, env_frames: int = 0) -> dict[str, float] | None:
        """Runs the updates due (`updates_due`); their mean statistics plus replay_size (steps
        stored), env_steps, updates (total), updates_run (this call), policy_lag_avg/max of the
        sampled steps (policy versions; and policy_lag_min), or None when none was due."""
        due = self.updates_due()
        if due == 0:
            return None
        self.set_learning_rate(env_frames)
        sums: dict[str, float] = {}
        lag_min, lag_max = math.inf, 0.0
        n = 0  # updates run (a stop can end the loop early)
        for i in range(due):
            if i and self.should_stop():
                break
            n += 1
            s = self.sample()
            before, self.last_step_skipped = self.policy_version, False
            stats = self.update(s)
            if self.policy_version == before and not self.last_step_skipped:
                self.policy_version += 1
            self.updates += 1
            if isinstance(self.replay, PrioritizedReplay) and s.td_errors is not None:
                self.replay.update_priorities(s.indices.cpu(), s.td_errors)
            lag = s.lag
            stats["policy_lag_avg"] = float(lag.mean())
            lag_min = min(lag_min, float(lag.min()))
            lag_max = max(lag_max, float(lag.max()))
            for k, v in stats.items():
                sums[k] = sums.get(k, 0.0) + v
        out = {k: v / n for k, v in sums.items()}
        out.update(
            replay_size=float(len(self.replay)),
            env_steps=float(self.env_steps),
            updates=float(self.updates),
            updates_run=float(n),
            policy_lag_min=lag_min,
            policy_lag_max=lag_max,
            policy_version=float(self.policy_version),
        )
        return out

    # ------------------------------------------------------------------------------ state
    def replay_file(self, version: int, env_steps: int) -> Path:
        """Where `--save_replay_buffer` writes the replay saved with the checkpoint of `version`
        after `env_steps` stored steps (both name it: before learning starts, or between two
        saves without an update, the version alone stays the same while the replay grows)."""
        return self.replay_folder() / f"replay_buffer_v{version}_s{env_steps}.pth"

    def replay_folder(self) -> Path:
        """This policy's checkpoint folder, where its replay files are written and the only place
        they are read from."""
        return Path(self.cfg.train_dir) / self.cfg.experiment / f"checkpoint_p{self.policy_id}"

    def state_dict(self) -> dict[str, Any]:
        """`LearnerBase.state_dict` plus "replay_counters" (env_steps, updates, the generator);
        with `--save_replay_buffer`, writes the replay (and the versions of its steps) to
        `replay_file(policy_version, env_steps)` (unless there already), keeps the previous one (a
        checkpoint refused for non-finite weights leaves the previous checkpoint the latest, and
        its replay with it), removes older ones and names the file under "replay_file" (its name
        only: the file is beside the checkpoint, wherever the experiment folder is moved)."""
        out = super().state_dict()
        out["replay_counters"] = {
            "env_steps": self.env_steps,
            "updates": self.updates,
            "generator": self.generator.get_state(),
        }
        if self.params.save_replay_buffer:
            path = self.replay_file(self.policy_version, self.env_steps)
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                save_replay(_ReplayWithVersions(self), path)
                files = sorted(path.parent.glob("replay_buffer_v*.pth"), key=lambda f: f.stat().st_mtime)
                for old in [f for f in files if f != path][:-1]:  # all but this one and the previous
                    old.unlink(missing_ok=True)
            out["replay_file"] = path.name
        return out

    def load_state_dict(self, state: dict[str, Any], keep_version: bool = False) -> None:
        """`LearnerBase.load_state_dict`; the counters and (with `--save_replay_buffer`, not for
        `keep_version`: a replaced policy keeps its own replay) the saved replay, read only from this
        policy's checkpoint folder (`replay_folder`). A missing replay file (or none saved), one
        outside that folder, or one holding other objects than tensors and plain values leaves the
        replay empty (logged): updates start again after `learning_starts` new steps."""
        super().load_state_dict(state, keep_version)
        if keep_version:
            return
        counters = state.get("replay_counters")
        if counters is not None:
            self.env_steps, self.updates = int(counters["env_steps"]), int(counters["updates"])
            self.generator.set_state(counters["generator"])
        recorded = state.get("replay_file")
        if recorded and self.params.save_replay_buffer:
            try:
                path = replay_file_in(self.replay_folder(), recorded)
                if path.exists():
                    load_replay(_ReplayWithVersions(self), path)
                    log.info("Loaded the replay buffer (%d steps) from %s.", len(self.replay), path)
                    return
                log.warning("The replay buffer file %s is missing: the replay starts empty.", path)
            except ReplayFileRefused as e:  # a file outside the folder, or not plain data
                log.error("Not loading the replay buffer: %s. The replay starts empty.", e)
        self._base_steps, self._base_updates = self.env_steps, self.updates


class _ReplayWithVersions:
    """The replay and the behavior versions of its steps, saved and loaded together."""

    def __init__(self, learner: ReplayLearnerBase):
        self.learner = learner

    def state_dict(self) -> dict[str, Any]:
        return {"replay": self.learner.replay.state_dict(), "versions": self.learner.versions}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.learner.replay.load_state_dict(state["replay"])
        self.learner.versions.copy_(state["versions"])


def replay_learner_bytes(params: ReplayParams, obs_bytes: int) -> int:
    """An estimate of one policy's replay in bytes: `replay_size` transitions of `obs_bytes` each
    (`replay_obs_bytes`) plus about 32 bytes of per-step fields (`Algorithm.replay_bytes`)."""
    return int(params.replay_size) * (int(obs_bytes) + 32)


__all__ = [
    "ReplayLearnerBase",
    "ReplayParams",
    "infer_num_columns",
    "replay_frame_stack",
    "replay_learner_bytes",
    "replay_obs_bytes",
]


def check_replay_flags(cfg: Config, algo: str) -> None:
    """Core flags the replay learners do not honour yet, refused rather than ignored.

    Raises:
        ConfigError: `--normalize_input=True` (no replay learner updates an input normaliser: its
            statistics would stay at mean 0, variance 1 and clip observations to +-5).
    """
    if cfg.normalize_input:
        raise ConfigError(
            "normalize_input",
            f"--algo={algo} does not update an input normaliser yet: observations would be clipped "
            "to +-5 by statistics that never learn.",
            "pass --normalize_input=False (the default for this algorithm), or scale the "
            "observations with a gymnasium wrapper (e.g. NormalizeObservation) via --env_wrappers.",
        )
