"""What SAC, TD3 and DDPG share on the engine (`--algo=SAC|TD3|DDPG`, continuous Box actions).

- Flags: `QPGParams` (replay size, learning starts, replay ratio, tau, net_arch), extended by each
  algorithm's own section; the minibatch is the core `--batch_size` (default 256 for these
  algorithms, Stable-Baselines3's), the learning rate the core `--learning_rate` (every optimizer:
  actor, critic(s) and SAC's temperature, as Stable-Baselines3 does).
- The acting module `ActingActor`: a `ContinuousActor` (actions in [-1, 1]^D, rescaled to the Box's
  bounds with `to_env`) that also knows when its run still acts uniformly at random (before
  `learning_starts`) and its exploration noise (TD3/DDPG); both are set from the cfg by
  `make_model` in every process, never saved.
- The learner `QPGLearner`: `observe` copies each block into a `UniformReplay` (one column per
  acting agent, `ActContext.actor_ids`), `train_replay` runs `replay_ratio` updates per env step
  observed once the replay holds `learning_starts` steps; `update` is each algorithm's.

Actions are stored in the env's units (what the envs executed) and normalised to [-1, 1] with
`ContinuousActor.from_env` when sampled, as Stable-Baselines3 stores scaled actions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from surge.cfg.config import Config, env_frameskip, param
from surge.errors import ConfigError
from surge.learning.algorithm import ActContext, Obs
from surge.learning.base import LearnerBase
from surge.learning.pg_checks import POLICY_GRADIENT_PARAMS
from surge.models.continuous_networks import ContinuousActor
from surge.replay.uniform import UniformReplay

#: core flags the off-policy continuous-control learners do not read
QPG_UNUSED_PARAMS = (*POLICY_GRADIENT_PARAMS, "max_grad_norm", "num_batches_per_iteration", "max_policy_lag")

#: defaults shared by SAC, TD3 and DDPG (Stable-Baselines3's): Adam eps 1e-8, minibatch 256, no
#: observation normalisation, one env step per block (an update after each env step)
QPG_DEFAULTS: dict[str, Any] = {
    "adam_eps": 1e-8,
    "batch_size": 256,
    "normalize_input": False,
    "rollout": 1,
    "recurrence": 1,
    "use_rnn": False,
    "num_minibatches_to_accumulate": 0,
}


@dataclass
class QPGParams:
    """Flags SAC, TD3 and DDPG share (their sections extend this one)."""

    replay_size: int = param(1_000_000, "Replay capacity in agent steps (Stable-Baselines3's buffer_size).")
    learning_starts: int = param(
        100,
        "Env steps (frames / frameskip) acted uniformly at random, and agent steps the replay holds, "
        "before the first update.",
    )
    replay_ratio: float = param(
        1.0, "Gradient steps per agent step observed (Stable-Baselines3's gradient_steps / train_freq)."
    )
    tau: float = param(0.005, "Polyak rate of the target networks, in (0, 1].")
    net_arch: list = param([256, 256], "Hidden layers of the actor and of each critic (MLP, ReLU).")

    def validate(self) -> None:
        """Raises `ConfigError` for a flag out of range (before any process starts)."""
        if self.replay_size < 2:
            raise ConfigError(
                "replay_size", f"must be >= 2, got {self.replay_size}.", "e.g. --replay_size=1000000."
            )
        if self.learning_starts < 0:
            raise ConfigError(
                "learning_starts", f"must be >= 0, got {self.learning_starts}.", "e.g. --learning_starts=100."
            )
        if not (math.isfinite(self.replay_ratio) and self.replay_ratio > 0):
            raise ConfigError(
                "replay_ratio", f"must be > 0, got {self.replay_ratio}.", "e.g. --replay_ratio=1."
            )
        if not 0.0 < self.tau <= 1.0:
            raise ConfigError("tau", f"must be in (0, 1], got {self.tau}.", "e.g. --tau=0.005.")
        if not self.net_arch or any(int(h) < 1 for h in self.net_arch):
            raise ConfigError(
                "net_arch",
                f"needs one or more positive sizes, got {self.net_arch}.",
                "e.g. --net_arch 256 256.",
            )


def check_box(action_space: gym.Space, algo: str) -> None:
    """Raises `ConfigError` ("algo") unless `action_space` is a Box with finite bounds."""
    if not isinstance(action_space, gym.spaces.Box):
        raise ConfigError(
            "algo",
            f"--algo={algo} needs a continuous (Box) action space, the env has {action_space}.",
            "use --algo=APPO or --algo=A2C for discrete actions, or an env with Box actions.",
        )
    if not (np.isfinite(action_space.low).all() and np.isfinite(action_space.high).all()):
        raise ConfigError(
            "algo",
            f"--algo={algo} squashes actions into the Box's bounds, the env's are infinite: {action_space}.",
            "bound the action space with a wrapper.",
        )


def validate_qpg(cfg: Config) -> None:
    """`Algorithm.validate` of SAC, TD3 and DDPG: a plain gymnasium id's spaces (made once per
    process, cached: `surge.cfg.space_defaults.probe_spaces`) must have Box actions (`check_box`).
    Envs of a family are checked when the run reads their spaces, before any process starts
    (`replay_bytes`)."""
    from surge.cfg.space_defaults import probe_spaces, uses_space_defaults
    from surge.envs.registry import find_family

    if uses_space_defaults(find_family(cfg.env)):
        check_box(probe_spaces(cfg.env, tuple(cfg.env_wrappers or ()))[1], cfg.algo)


def replay_bytes(cfg: Config, info: Any) -> int:
    """`Algorithm.replay_bytes`: the replay's size in bytes (observations float32, actions float32,
    the reward and flags), checked against the machine's memory before the run starts. Also refuses
    a non-Box action space there (`check_box`), before any process starts."""
    check_box(info.action_space, cfg.algo)
    p = cfg.algo_params
    obs = sum(int(np.prod(s.shape)) for s in _leaves(info.observation_space))
    act = int(np.prod(info.action_space.shape))
    return int(p.replay_size) * (4 * obs + 4 * act + 4 + 4 + 8)


def _leaves(space: gym.Space) -> list[gym.Space]:
    if isinstance(space, gym.spaces.Dict):
        return [s for sub in space.spaces.values() for s in _leaves(sub)]
    return [space]


class ActingActor(ContinuousActor):
    """The acting module of SAC, TD3 and DDPG: a `ContinuousActor` with no recurrent state.

    Attributes (plain, from the cfg, not in the state_dict):
        random_until_frames: env frames (`ActContext.env_frames`) before which `act` draws
            actions uniformly in the Box (`learning_starts` x frameskip).
        noise_std: std of the Gaussian exploration noise of a deterministic actor, in [-1, 1]
            units (0: none).
    """

    rnn_state_size = 0

    def __init__(self, *args: Any, random_until_frames: int = 0, noise_std: float = 0.0, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.random_until_frames, self.noise_std = random_until_frames, noise_std


def make_actor(
    cfg: Config, obs_space: gym.Space, action_space: gym.Space, gaussian: bool, noise_std: float
) -> ActingActor:
    """The acting module for `cfg` (raises `ConfigError` for a non-Box action space)."""
    check_box(action_space, cfg.algo)
    p: QPGParams = cfg.algo_params
    return ActingActor(
        cfg,
        obs_space,
        action_space,
        gaussian=gaussian,
        hidden_sizes=tuple(int(h) for h in p.net_arch),
        random_until_frames=p.learning_starts * env_frameskip(cfg),
        noise_std=noise_std,
    )


def _uniform(shape: tuple[int, ...], device: torch.device) -> Tensor:
    return torch.rand(shape, device=device) * 2.0 - 1.0


@torch.no_grad()
def qpg_act(model: nn.Module, obs: Obs | None, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """`Algorithm.act` of SAC, TD3 and DDPG: actions `[B, D]` float32 in the Box's units.

    Before `random_until_frames` (and not deterministic): uniform in the Box. Otherwise a Gaussian
    actor samples `tanh(mean + std·ξ)` (its `tanh(mean)` when `ctx.deterministic`), a
    deterministic one adds `N(0, noise_std²)` to `μ(s)` and clips to [-1, 1] (Fujimoto et al.
    2018, Algorithm 1's `a = clip(μ(s) + ε)`; none when deterministic). rnn_states stay `[B, 0]`."""
    assert obs is not None and isinstance(model, ActingActor)
    if not ctx.deterministic and ctx.env_frames < model.random_until_frames:
        B = rnn_states.shape[0]
        a = _uniform((B, model.action_dim), model.low.device)
    else:
        a = model(obs, deterministic=ctx.deterministic).actions
        if model.log_std is None and not ctx.deterministic and model.noise_std > 0:
            a = (a + model.noise_std * torch.randn_like(a)).clamp(-1.0, 1.0)
    return {"actions": model.to_env(a), "rnn_states": rnn_states}


def qpg_eval_act(model: nn.Module, obs: Obs | None, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """`Algorithm.eval_act`: the deterministic action (`tanh(mean)` for SAC, `μ(s)` without noise
    for TD3/DDPG), whatever `ctx.deterministic` says."""
    return qpg_act(model, obs, rnn_states, ActContext(deterministic=True))


class QPGLearner(LearnerBase):
    """The replay learner of SAC, TD3 and DDPG (module docstring). Subclasses add their optimizers
    in `__init__` (`self.optimizers`, all at `learning_rate`) and implement `update`."""

    model: ActingActor

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        cfg = self.cfg
        self.params: QPGParams = cfg.algo_params
        # one column per acting agent of a single-agent env (`ActContext.actor_ids`)
        self.num_columns = cfg.num_workers * cfg.num_envs_per_worker
        capacity = -(-self.params.replay_size // self.num_columns) + cfg.rollout + 2
        self.replay = UniformReplay(capacity, self.num_columns, n_step=1, gamma=self.hp.gamma)
        seed = cfg.seed if cfg.seed is not None else 0
        self.generator = torch.Generator().manual_seed(int(seed) * 1000 + self.policy_id)
        self.observed_steps = 0  # agent steps copied into the replay
        self.due_updates = 0.0  # updates owed at `replay_ratio` (fractional carry)
        self.num_updates = 0

    def prepare_batch(self, slots: Tensor) -> dict[str, Any]:
        """`LearnerBase.prepare_batch` plus `actor_ids` `[N]` int64 (the replay's columns)."""
        b = super().prepare_batch(slots)
        b["actor_ids"] = self.buffers.actor_ids[slots].clone()
        return b

    def observe(self, b: dict[str, Any]) -> None:
        """Copies a block into the replay: only this policy's active steps are sampled."""
        active = b["is_active"]
        if "acting_policy" in b:
            active = active & (b["acting_policy"] == self.policy_id)
        block = {k: b[k] for k in ("obs", "actions", "rewards", "dones", "trunc")}
        block["is_active"] = active
        cols = b["actor_ids"].cpu()
        if int(cols.min()) < 0 or int(cols.max()) >= self.num_columns:
            raise ValueError(
                f"actor ids {cols.tolist()} outside the replay's {self.num_columns} columns "
                "(one per env: multi-agent envs are not supported by SAC, TD3 and DDPG yet)"
            )
        self.replay.append(block, cols)
        new = int(active.sum())
        self.observed_steps += new
        if self.observed_steps >= max(self.params.learning_starts, 1):
            self.due_updates += new * self.params.replay_ratio

    def train_replay(self, env_frames: int = 0) -> dict[str, float] | None:
        """The updates due (`replay_ratio` per observed agent step after `learning_starts`), each
        on a fresh minibatch of `batch_size` steps; their mean statistics, or None."""
        n = int(self.due_updates)
        if n < 1:
            return None
        self.due_updates -= n
        totals: dict[str, float] = {}
        dev = self.device
        for _ in range(n):
            if self.should_stop():
                break
            s = self.replay.sample(self.cfg.batch_size, self.generator)
            batch = {
                "obs": _to(s["obs"], dev),
                "next_obs": _to(s["next_obs"], dev),
                "actions": self.model.from_env(s["actions"].to(dev).float()).clamp(-1.0, 1.0),
                "returns": s["returns"].to(dev),
                "discounts": s["discounts"].to(dev),
            }
            self.num_updates += 1
            stats = self.update(batch)
            for k, v in stats.items():
                totals[k] = totals.get(k, 0.0) + v
        out = {k: v / n for k, v in totals.items()}
        out["replay_steps"] = float(len(self.replay))
        out["num_updates"] = float(self.num_updates)
        out.update(self.skip_stats(0))
        return out

    def state_dict(self) -> dict[str, Any]:
        """`LearnerBase.state_dict` plus the update and observed-step counters (the replay
        itself is not saved: a resumed run refills it, learning again after `learning_starts`)."""
        out = super().state_dict()
        out["qpg"] = {"num_updates": self.num_updates, "due_updates": self.due_updates}
        return out

    def load_state_dict(self, state: dict[str, Any], keep_version: bool = False) -> None:
        super().load_state_dict(state, keep_version)
        saved = state.get("qpg")
        if saved is not None:
            self.num_updates = int(saved["num_updates"])

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        """One gradient step of the algorithm on a minibatch: obs, next_obs `[B, ...]`, actions
        `[B, D]` in [-1, 1], returns `[B]` (scaled rewards), discounts `[B]` (γ, 0 after a
        termination), all on the learning device. Returns scalar statistics."""
        raise NotImplementedError

    def step(self, name: str, loss: Tensor, params: list[Tensor]) -> bool:
        """Backpropagates `loss` into `params` and steps the optimizer `name`; a non-finite loss
        skips the step (counted in `skipped_updates`). Returns whether the step was taken."""
        opt = self.optimizers[name]
        opt.zero_grad(set_to_none=True)
        if not bool(torch.isfinite(loss.detach())):
            self.skipped_updates += 1
            return False
        loss.backward(inputs=params)
        opt.step()
        return True

    def set_hyperparams(self, values: dict[str, Any]) -> dict[str, tuple[float, float]]:
        changed = super().set_hyperparams(values)
        self._set_lr(self.hp.learning_rate)
        return changed

    def set_learning_rate(self, env_frames: int) -> float:
        lr = super().set_learning_rate(env_frames)
        self._set_lr(lr)
        return lr

    def _set_lr(self, lr: float) -> None:
        for opt in self.optimizers.values():
            for group in opt.param_groups:
                group["lr"] = lr


def _to(x: Any, dev: torch.device) -> Any:
    if isinstance(x, dict):
        return {k: v.to(dev).float() for k, v in x.items()}
    return x.to(dev).float()


def adam(params: Any, learner: LearnerBase) -> torch.optim.Adam:
    """Adam at the policy's learning rate and betas, `adam_eps` (as `make_adam`)."""
    hp = learner.hp
    return torch.optim.Adam(
        params, lr=hp.learning_rate, betas=(hp.adam_beta1, hp.adam_beta2), eps=learner.cfg.adam_eps
    )
