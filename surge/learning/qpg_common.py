"""What SAC, TD3 and DDPG share on the engine (`--algo=SAC|TD3|DDPG`, continuous Box actions).

- Flags: `QPGParams` (`ReplayParams` plus tau and net_arch), extended by each
  algorithm's own section; the minibatch is the core `--batch_size` (default 256 for these
  algorithms, Stable-Baselines3's), the learning rate the core `--learning_rate` (every optimizer:
  actor, critic(s) and SAC's temperature, as Stable-Baselines3 does).
- The acting module `ActingActor`: a `ContinuousActor` (actions in [-1, 1]^D, rescaled to the Box's
  bounds with `to_env`) that also knows when its run still acts uniformly at random (before
  `learning_starts`) and its exploration noise (TD3/DDPG); both are set from the cfg by
  `make_model` in every process, never saved.
- The learners (TD3's, which is DDPG's with its options off, and SAC's) are `ReplayLearnerBase`s
  (`surge.learning.replay_learner`: replay with one column per acting agent, `learning_starts`,
  `replay_ratio`, n-step returns, prioritized replay, `--save_replay_buffer`) with every optimizer
  following the learning rate; they share `qpg_minibatch` and `optimizer_step`.

Actions are stored in the env's units (what the envs executed) and normalised to [-1, 1] with
`ContinuousActor.from_env` when sampled, as Stable-Baselines3 stores scaled actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from surge.cfg.config import Config, algo_params, env_frameskip, param
from surge.envs.probe import probe_spaces, uses_space_defaults
from surge.envs.registry import find_family
from surge.errors import ConfigError
from surge.learning.algorithm import ActContext, Algorithm, Feed, Obs, register_algorithm
from surge.learning.base import LearnerBase
from surge.learning.pg_checks import POLICY_GRADIENT_PARAMS
from surge.learning.replay_learner import ReplayLearnerBase, ReplayParams, check_replay_flags
from surge.learning.replay_space_defaults import qpg_space_defaults
from surge.models.continuous_networks import ContinuousActor
from surge.replay.samples import TransitionSample

#: core flags the off-policy continuous-control learners do not read
QPG_UNUSED_PARAMS = (*POLICY_GRADIENT_PARAMS, "max_grad_norm", "num_batches_per_iteration", "max_policy_lag")

#: defaults shared by SAC, TD3 and DDPG: Stable-Baselines3's Adam eps 1e-8, minibatch 256, no
#: observation normalisation; blocks of 8 env steps per env, each followed by the updates due
#: (`--replay_ratio` per env step, the same number of updates as SB3's train_freq 1 and
#: gradient_steps 1, in bursts of 8). `--rollout=1` (an update after each env step, as SB3) is
#: about 5x the CPU per env step outside the updates: every block pays the serial placement's
#: inference call, hand-over, copy and replay append (2026-11-24, docs/logs/sac_speed_2026-11-24.md).
QPG_DEFAULTS: dict[str, Any] = {
    "adam_eps": 1e-8,
    "batch_size": 256,
    "normalize_input": False,
    "rollout": 8,
    "recurrence": 1,
    "use_rnn": False,
    "num_minibatches_to_accumulate": 0,
}


@dataclass
class QPGParams(ReplayParams):
    """Flags SAC, TD3 and DDPG share (their sections extend this one); `ReplayParams`' with
    Stable-Baselines3's defaults for these algorithms: learning after 100 steps, one update per
    env step."""

    learning_starts: int = param(
        100,
        "Env steps of this policy stored in the replay before the first update; the actors act "
        "uniformly at random until the run has this many env steps (x frameskip env frames).",
    )
    replay_ratio: float = param(
        1.0,
        "Gradient updates per env step once learning started (SB3: gradient_steps / (train_freq * n_envs)).",
    )
    tau: float = param(0.005, "Polyak rate of the target networks, in (0, 1].")
    net_arch: list = param([256, 256], "Hidden layers of the actor and of each critic (MLP, ReLU).")

    def validate(self) -> None:
        """Raises `ConfigError` for a flag out of range (before any process starts)."""
        super().validate()
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
    process, cached: `surge.envs.probe.probe_spaces`) must have Box actions (`check_box`).
    Envs of a family are checked when the run reads their spaces, before any process starts
    (`replay_bytes`)."""
    check_replay_flags(cfg, cfg.algo)
    if algo_params(cfg, QPGParams).prioritized_replay:
        raise ConfigError(
            "prioritized_replay",
            f"--algo={cfg.algo} does not weight its critic loss by importance weights nor write "
            "priorities yet: sampling would stay uniform.",
            "pass --prioritized_replay=False (the default).",
        )
    if uses_space_defaults(find_family(cfg.env)):
        check_box(probe_spaces(cfg.env, tuple(cfg.env_wrappers or ()))[1], cfg.algo)


def replay_bytes(cfg: Config, info: Any) -> int:
    """`Algorithm.replay_bytes`: the replay's size in bytes (observations float32, actions float32,
    the reward and flags), checked against the machine's memory before the run starts. Also refuses
    a non-Box action space there (`check_box`), before any process starts."""
    check_box(info.action_space, cfg.algo)
    p = cfg.algo_params
    obs = sum(_size(s) for s in _leaves(info.observation_space))
    act = _size(info.action_space)
    return int(p.replay_size) * (4 * obs + 4 * act + 4 + 4 + 8)


def _size(space: gym.Space) -> int:
    return int(np.prod(space.shape or ()))


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


def qpg_minibatch(samples: TransitionSample, actor: ActingActor) -> TransitionSample:
    """The minibatch the continuous learners update on, from `ReplayLearnerBase.sample`'s
    `samples`: the same sample with obs, next_obs `[B, ...]` as float32 and actions `[B, D]`
    mapped from the env's units to [-1, 1] (`ContinuousActor.from_env`); returns `[B]` (the n-step
    return of scaled rewards) and discounts `[B]` (γ^n, 0 after a termination) as they are, on
    the samples' device."""
    return samples.replace(
        obs=_float(samples.obs),
        next_obs=_float(samples.next_obs),
        actions=actor.from_env(samples.actions.float()).clamp(-1.0, 1.0),
    )


def optimizer_step(learner: ReplayLearnerBase, name: str, loss: Tensor, params: list[Tensor]) -> bool:
    """Backpropagates `loss` into `params` only and steps `learner.optimizers[name]`; a non-finite
    loss skips the step (counted in `learner.skipped_updates`, `last_step_skipped`). Returns
    whether the step was taken."""
    opt = learner.optimizers[name]
    opt.zero_grad(set_to_none=True)
    if not bool(torch.isfinite(loss.detach())):
        learner.skipped_updates += 1
        learner.last_step_skipped = True
        return False
    loss.backward(inputs=params)
    opt.step()
    return True


def _float(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: v.float() for k, v in x.items()}
    return x.float()


def adam(params: Any, learner: LearnerBase) -> torch.optim.Adam:
    """Adam at the policy's learning rate and betas, `adam_eps` (as `make_adam`)."""
    hp = learner.hp
    return torch.optim.Adam(
        params, lr=hp.learning_rate, betas=(hp.adam_beta1, hp.adam_beta2), eps=learner.cfg.adam_eps
    )


#: the statistics every continuous-control learner reports -> TensorBoard tag (docs/metrics.md)
QPG_METRIC_TAGS = {
    "critic_loss": "losses/critic_loss",
    "actor_loss": "losses/actor_loss",
    "q_mean": "train/q_mean",
    "replay_steps": "replay/steps",
}


def qpg_algorithm(
    name: str,
    description: str,
    make_learner: Any,
    make_model: Any,
    params: type,
    default_overrides: dict[str, Any],
    metric_tags: dict[str, str] | None = None,
) -> Algorithm:
    """The declaration SAC, TD3 and DDPG share (Box actions, the replay feed, acting with
    `qpg_act` / `qpg_eval_act`, the policy-gradient flags unused), registered as `name`."""
    return register_algorithm(
        Algorithm(
            name=name,
            description=description,
            step_fields=lambda action_space: [],
            act=qpg_act,
            eval_act=qpg_eval_act,
            make_learner=make_learner,
            make_model=make_model,
            feed=Feed.REPLAY,
            params=params,
            default_overrides=default_overrides,
            unused_params=QPG_UNUSED_PARAMS,
            space_defaults=qpg_space_defaults,
            replay_bytes=replay_bytes,
            validate=validate_qpg,
            metric_tags={**QPG_METRIC_TAGS, **(metric_tags or {})},
        )
    )
