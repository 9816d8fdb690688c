"""Plays full evaluation episodes of a policy's weights on an eval env of its own: the loop of
evaluation during training (`surge.evaluation.train_eval`), inline in the serial placement and in
the evaluator process of the async one.

The eval env (`--eval_env`, default the training env) is made by the run's env factory
(`make_env`) with the training wrappers (frame
stacking, observation and reward wrappers, `--env_wrappers`), except Atari's episodic life (a lost
life would end the episode: returns are whole games, as in `surge enjoy`) and batching (one env;
a batched family plays its `eval_env_name` twin, as enjoy does). Episode k of every evaluation
resets with seed `eval_seed(cfg, k)`: the same seeds each time (so two evaluations differ by the
weights only), distinct from the training envs' seeds.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from surge.cfg.config import Config
from surge.envs.registry import find_family, make_env
from surge.errors import ConfigError, EnvError
from surge.learning.algorithm import ActContext, acting_state_size, get_algorithm
from surge.learning.central_value import actor_obs
from surge.sampling.env_actions import BoxActionMap
from surge.sampling.objective import episode_statistic

#: added to `seed * 100003` for eval seeds: far from the training envs' `seed * 100003 + k`
EVAL_SEED_OFFSET = 2**31
#: env steps between two checks of `play`'s `stop`
STOP_CHECK_STEPS = 64
#: an eval env that raises this many times in a row (its rebuilt copy failing again) is broken
MAX_CONSECUTIVE_EVAL_FAULTS = 3

log = logging.getLogger("surge")


def eval_seed(cfg: Config, episode: int, base: int | None = None) -> int:
    """The reset seed of eval episode `episode` (0-based within an evaluation): `(seed * 100003
    + 2**31 + episode) mod 2**32` with `--seed`, else `base + episode` (`base` drawn once per run)."""
    if cfg.seed is not None:
        return (int(cfg.seed) * 100003 + EVAL_SEED_OFFSET + episode) % 2**32
    return ((base or 0) + episode) % 2**32


@dataclass
class EvalResult:
    """One evaluation of one policy.

    Attributes:
        policy_id: the policy evaluated.
        policy_version: the version of the weights played.
        env_frames: the run's env frames when those weights were read (the x of the curves).
        returns: per-episode return (env reward units, unclipped), in the order episodes ended.
        lengths: per-episode length in env steps.
        seconds: wall time of the evaluation.
        stats: per-episode values of `--eval_stat` (episodes that did not report it left out);
            empty without the flag.
        weights: the model state played (CPU tensors), kept only for `--save_best_by_eval`.
    """

    policy_id: int
    policy_version: int
    env_frames: int
    returns: list[float]
    lengths: list[int]
    seconds: float = 0.0
    stats: list[float] = field(default_factory=list)
    weights: dict[str, torch.Tensor] | None = field(default=None, repr=False)

    @property
    def return_mean(self) -> float:
        return float(np.mean(self.returns))

    @property
    def return_std(self) -> float:
        return float(np.std(self.returns))

    @property
    def length_mean(self) -> float:
        return float(np.mean(self.lengths))

    @property
    def stat_mean(self) -> float | None:
        """Mean of `stats`, or None when no episode reported the statistic."""
        return float(np.mean(self.stats)) if self.stats else None


@dataclass
class _Slot:
    """One eval env's reset being played: its index, the agents' latest observations, returns
    and lengths so far, and episodes ended (per agent); `streak`: the env's faults in a row."""

    reset: int
    obs: list
    ep_ret: np.ndarray
    ep_len: np.ndarray
    ends: list[int]
    streak: int = 0


def eval_cfg(cfg: Config) -> tuple[Config, str]:
    """A copy of `cfg` to make the eval env with, and the env name to make (see the module doc)."""
    cfg = copy.deepcopy(cfg)
    cfg.batched_sampling = False
    if getattr(cfg, "eval_env", ""):
        cfg.env = cfg.eval_env
    family = find_family(cfg.env)
    env_name = family.eval_env_name(cfg.env) if family.eval_env_name else cfg.env
    if env_name != cfg.env:  # the twin's family reads its own section: carry the shared flags over
        twin = find_family(env_name).extra_params
        if twin is not None and cfg.env_params is not None:
            shared = {f.name for f in dataclasses.fields(twin)} & {
                f.name for f in dataclasses.fields(cfg.env_params)
            }
            cfg.env_params = twin(**{n: getattr(cfg.env_params, n) for n in shared})
    if hasattr(cfg.env_params, "atari_episodic_life"):
        cfg.env_params.atari_episodic_life = False
    return cfg, env_name


def _obs_tensor(obs_list: list, device: torch.device) -> Any:
    first = obs_list[0]
    if isinstance(first, dict):
        return {k: torch.as_tensor(np.stack([o[k] for o in obs_list]), device=device) for k in first}
    return torch.as_tensor(np.stack(obs_list), device=device)


class EpisodePlayer:
    """An eval env and an acting model of `cfg`'s algorithm, built once; `play` evaluates weights.

    Args:
        cfg: the run's config (`eval_episodes`, `eval_deterministic`, `seed`, the env's flags).
        device: where the model acts.

    Raises:
        ConfigError, EnvError: the env cannot be made (see `make_env`).
    """

    def __init__(self, cfg: Config, device: torch.device | None = None):
        self.cfg = cfg
        self.device = device or torch.device("cpu")
        env_cfg, env_name = eval_cfg(cfg)
        self._make = lambda: make_env(env_cfg, env_name=env_name)  # again after a fault (`_fault`)
        #: the eval envs, made as an evaluation first needs them (`--eval_num_envs` at most)
        self.envs: list[Any] = [self._make()]
        self.env_faults = 0  # exceptions raised by an eval env's step (each rebuilt that env)
        if cfg.eval_env:
            self._check_spaces(cfg, env_name)
        algo = get_algorithm(cfg.algo)
        self.model: nn.Module = algo.make_model(
            cfg, self.env.observation_space, self.env.action_space
        ).acting.to(self.device)
        self.model.eval()
        self.act = algo.evaluation_act
        self.ctx = ActContext(deterministic=bool(cfg.eval_deterministic))
        space = self.env.action_space
        self.box_map = (
            BoxActionMap(space.low, space.high, cfg.clip_actions, cfg.rescale_actions)
            if isinstance(space, gym.spaces.Box)
            else None
        )
        self.base_seed = random.SystemRandom().randrange(2**31) if cfg.seed is None else None
        self.stats: list[float] = []  # --eval_stat of the episodes of the last `play`

    @property
    def env(self) -> Any:
        """The first eval env (the one whose spaces the model was made for)."""
        return self.envs[0]

    @env.setter
    def env(self, env: Any) -> None:
        self.envs[0] = env

    def _check_spaces(self, cfg: Config, eval_name: str) -> None:
        """Raises ConfigError naming `--eval_env` when its spaces differ from the training env's
        (the weights would not fit its model), closing the eval env first."""
        train_cfg = copy.deepcopy(cfg)
        train_cfg.batched_sampling = False
        train_env = make_env(train_cfg)
        try:
            ours = (self.env.observation_space, self.env.action_space)
            theirs = (train_env.observation_space, train_env.action_space)
        finally:
            train_env.close()
        if ours != theirs:
            self.env.close()
            raise ConfigError(
                "eval_env",
                f"{eval_name} has observation space {ours[0]} and action space {ours[1]}, the "
                f"training env {cfg.env} {theirs[0]} and {theirs[1]}: its weights cannot play it.",
                "pass an --eval_env with the training env's spaces, or leave it out (the training env).",
            )

    def play(
        self, episodes: int | None = None, stop: Callable[[], bool] | None = None
    ) -> tuple[list[float], list[int]]:
        """Plays `episodes` (default `--eval_episodes`) full episodes with the model's current
        weights, on up to `--eval_num_envs` envs at once (one batched forward pass per step).

        Reset r of an evaluation (r = 0, 1, ...) is made with seed `eval_seed(cfg, r)`, whichever
        env makes it, and an evaluation makes exactly the resets its episodes need, each played to
        its end: the returns do not depend on how many envs play them, nor on which episodes end
        first (taking the first N to end would favour short episodes). A single-agent env's reset r
        is episode r; a multi-agent env's agents each count one episode, and its env is reset when
        all its agents' episodes ended together. The recurrent state is carried across steps and
        zeroed when an agent's episode ends. `stop` (asked every `STOP_CHECK_STEPS` steps) True
        ends the play early, with the episodes finished so far. An exception from an env's `step`
        (a flaky emulator, `FlakyStep`) is a fault, as in the rollout workers: that env is closed,
        rebuilt and goes on with the next reset; the episodes it was playing end there, counted with
        their return so far (training drops a faulted episode's statistics instead,
        `surge.sampling.env_faults`; an evaluation must finish its episodes, and a long one under
        frequent faults would never finish whole), and a reset a fault left with fewer episodes
        than agents (one that had not yet stepped) is made up by one more.

        Raises:
            EnvError: an env raised `MAX_CONSECUTIVE_EVAL_FAULTS` times in a row (rebuilt each time).

        Returns:
            (returns, lengths): per episode, in reset order (then agent, then order of ending), the
            return in env reward units (the env's own `RecordEpisodeStatistics` when present:
            unclipped, whole games) and the length in env steps.
        """
        cfg, device = self.cfg, self.device
        wanted = cfg.eval_episodes if episodes is None else episodes
        n = int(self.envs[0].num_agents)
        self._plan = -(-wanted // n)  # resets to make; one more per reset a fault left empty
        self._next_reset = 0
        k = max(1, min(int(cfg.eval_num_envs), self._plan))
        while len(self.envs) < k:
            self.envs.append(self._make())
        ended: dict[tuple[int, int, int], tuple[float, int, float | None]] = {}  # (reset, agent, i)
        rnn = torch.zeros(k * n, acting_state_size(self.model), device=device)
        slots = [self._start(j, n, rnn) for j in range(k)]
        with torch.no_grad():
            steps = 0
            while any(s is not None for s in slots):
                steps += 1
                if stop is not None and steps % STOP_CHECK_STEPS == 0 and stop():
                    break
                live = [(j, s) for j, s in enumerate(slots) if s is not None]
                rows = torch.as_tensor([j * n + a for j, _ in live for a in range(n)], device=device)
                obs_t = _obs_tensor([o for _, s in live for o in s.obs], device)
                if cfg.central_value:  # the actor never sees the central value's state
                    obs_t = actor_obs(obs_t, cfg.central_value_state_key)
                out = self.act(self.model, obs_t, rnn[rows], self.ctx)
                actions = out["actions"].cpu().numpy()
                if self.box_map is not None:  # as the rollout workers do (surge.sampling.env_actions)
                    actions = self.box_map(actions.reshape(len(actions), -1)).reshape(actions.shape)
                rnn[rows] = out["rnn_states"]
                for i, (j, s) in enumerate(live):
                    slots[j] = self._step(j, s, list(actions[i * n : (i + 1) * n]), ended, rnn)
        keys = sorted(ended)[:wanted]
        self.stats = [st for key in keys if (st := ended[key][2]) is not None]
        return [ended[key][0] for key in keys], [ended[key][1] for key in keys]

    def _start(self, j: int, n: int, rnn: Tensor) -> _Slot | None:
        """Env `j`'s next reset, or None when every reset of the evaluation is handed out."""
        if self._next_reset >= self._plan:
            return None
        r, self._next_reset = self._next_reset, self._next_reset + 1
        obs, _ = self.envs[j].reset(seed=eval_seed(self.cfg, r, self.base_seed))
        rnn[j * n : (j + 1) * n] = 0.0
        return _Slot(r, list(obs), np.zeros(n), np.zeros(n, dtype=np.int64), [0] * n)

    def _step(self, j: int, slot: _Slot, actions: list, ended: dict, rnn: Tensor) -> _Slot | None:
        """Steps env `j` (playing `slot`) with `actions`, records the episodes that end in `ended`
        and returns the slot to play next (the same, the env's next reset, or None)."""
        n = len(actions)
        try:
            obs, rew, term, trunc, infos = self.envs[j].step(actions)
            slot.streak = 0
        except Exception as e:  # noqa: BLE001 - any env error is a fault (see `play`)
            self._fault(j, e, slot.streak + 1)
            for a in range(n):  # ended by the fault, counted partial (see `play`)
                if slot.ep_len[a]:
                    ended[(slot.reset, a, slot.ends[a])] = (float(slot.ep_ret[a]), int(slot.ep_len[a]), None)
                    slot.ends[a] += 1
            if sum(slot.ends) < n:
                self._plan += 1  # this reset gave fewer episodes than agents: one more is made
            nxt = self._start(j, n, rnn)
            if nxt is not None:
                nxt.streak = slot.streak + 1
            return nxt
        slot.obs = list(obs)
        slot.ep_ret += np.asarray(rew, dtype=np.float64)
        slot.ep_len += 1
        done = [bool(term[a] or trunc[a]) for a in range(n)]
        for a in range(n):
            if not done[a]:
                continue
            ep = infos[a].get("episode")
            ret = float(np.asarray(ep["r"])) if ep is not None else float(slot.ep_ret[a])
            length = int(np.asarray(ep["l"])) if ep is not None else int(slot.ep_len[a])
            stat = episode_statistic(infos[a], self.cfg.eval_stat) if self.cfg.eval_stat else None
            ended[(slot.reset, a, slot.ends[a])] = (ret, length, stat)
            slot.ends[a] += 1
            slot.ep_ret[a], slot.ep_len[a] = 0.0, 0
            if rnn.shape[-1]:
                rnn[j * n + a] = 0.0
        return self._start(j, n, rnn) if all(done) else slot

    def _fault(self, j: int, error: Exception, streak: int) -> None:
        """Counts the fault `error` of env `j` (its `streak`-th in a row), closes the env and builds
        a new one in its place. Raises EnvError at `MAX_CONSECUTIVE_EVAL_FAULTS` faults in a row."""
        self.env_faults += 1
        text = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        if streak >= MAX_CONSECUTIVE_EVAL_FAULTS:
            raise EnvError(
                f"the eval env {self.cfg.eval_env or self.cfg.env!r} raised {streak} times in a row "
                f"(rebuilt after each); last: {text}"
            ) from error
        log.warning(
            "Eval env raised in step (%d fault(s) so far; rebuilt, its episode ended there): %s",
            self.env_faults,
            text,
        )
        try:
            self.envs[j].close()
        except Exception:  # noqa: BLE001 - a crashed env may not close cleanly
            pass
        self.envs[j] = self._make()

    def evaluate(
        self, policy_id: int, policy_version: int, env_frames: int, stop: Callable[[], bool] | None = None
    ) -> EvalResult:
        """`play` with the model's current weights, timed, as an `EvalResult` (without weights)."""
        start = time.monotonic()
        returns, lengths = self.play(stop=stop)
        seconds = time.monotonic() - start
        return EvalResult(policy_id, policy_version, env_frames, returns, lengths, seconds, list(self.stats))

    def close(self) -> None:
        for env in self.envs:
            env.close()
