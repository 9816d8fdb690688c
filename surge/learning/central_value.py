"""Central value: an asymmetric actor-critic, rl_games' `central_value_config`
(rl_games/algos_torch/central_value.py, `CentralValueTrain`). docs/central_value.md.

Env convention (rl_games'): the observation is a Dict with an `obs` entry and a state entry
(`--central_value_state_key`, default "state"). With `--central_value=True`

- the actor (the acting module inference runs) is built on the observation space without the state
  entry (the bare `obs` space when only `obs` is left, so it is the model it would be without a
  state), and inference never reads the state from the trajectory buffers (they still store it:
  the learner reads it);
- a separate network, `CentralValue`, reads the state; the learner (`CentralValueTrainer`) takes
  the values of GAE's (or each minibatch's V-trace) advantages and targets and the bootstrap value
  from it (no_grad) and trains it with its own Adam, minibatches and epochs after the policy
  update, on the GAE targets (V-trace: targets recomputed over the batch with the updated policy);
  the actor's value head gets no gradient (the PPO loss's value term has coefficient 0).

Multi-agent envs whose agents share one state: each agent's observation Dict carries the (same)
state, so each agent's trajectory holds it and the central value is trained per agent step.
"""

from __future__ import annotations

import math

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.cfg.config import Config, flag_value
from surge.data.trajectory_batch import TrajectoryBatch
from surge.envs.registry import make_env
from surge.errors import ConfigError
from surge.learning.algorithm import ModelParts, algorithm_names, get_algorithm
from surge.learning.base import _adam_impl
from surge.models.actor_critic import make_actor_critic
from surge.models.encoders import ACTIVATIONS
from surge.models.normalization import RunningMeanStd

Obs = Tensor | dict[str, Tensor]
#: the name of the central value in `ModelParts.learner_modules` and in the learner's optimizers
CV_NAME = "central_value"


def check_state_space(cfg: Config, obs_space: gym.Space) -> None:
    """Raises `ConfigError` (field central_value) unless `obs_space` is a Dict with a Box entry
    `cfg.central_value_state_key` and at least one other entry."""
    key = cfg.central_value_state_key
    ok = (
        isinstance(obs_space, gym.spaces.Dict)
        and key in obs_space.spaces
        and isinstance(obs_space.spaces[key], gym.spaces.Box)
        and len(obs_space.spaces) > 1
    )
    if not ok:
        raise ConfigError(
            "central_value",
            f"--central_value=True needs an observation Dict with a Box entry {key!r} "
            f"(--central_value_state_key) beside the actor's entries; env {cfg.env!r} observes {obs_space}.",
            "use an env whose observation is Dict(obs=..., state=...) (rl_games' convention), set "
            "--central_value_state_key to its state entry, or pass --central_value=False.",
        )


def actor_observation_space(obs_space: gym.Space, key: str) -> gym.Space:
    """The actor's observation space: `obs_space` (a Dict) without `key`; the bare `obs` entry's
    space when only `obs` is left."""
    assert isinstance(obs_space, gym.spaces.Dict)
    rest = {k: v for k, v in obs_space.spaces.items() if k != key}
    if list(rest) == ["obs"]:
        return rest["obs"]
    return gym.spaces.Dict(rest)


def actor_obs(obs: Obs, key: str) -> Obs:
    """The actor's part of a batch of observations (`{name: [B, ...]}`): without `key`; the bare
    `obs` tensor when only it is left (as `actor_observation_space`)."""
    assert isinstance(obs, dict)
    rest = {k: v for k, v in obs.items() if k != key}
    return rest["obs"] if list(rest) == ["obs"] else rest


class CentralValue(nn.Module):
    """The central value network: state `[B, *state_shape]` float -> value `[B]` float32 (in the
    returns normaliser's units when `normalize_returns`).

    MLP of `central_value_mlp_layers` (`[]`: `encoder_mlp_layers`) with `nonlinearity`, a linear
    value head; with `central_value_normalize_input` a running mean/std of the state first
    (`surge.models.normalization.RunningMeanStd`, saved with the module). Feed-forward only
    (`central_value_use_rnn` is refused).
    """

    def __init__(self, cfg: Config, state_space: gym.spaces.Box):
        super().__init__()
        shape = tuple(state_space.shape)
        self.normalizer = RunningMeanStd(shape) if cfg.central_value_normalize_input else None
        sizes = [int(s) for s in (cfg.central_value_mlp_layers or cfg.encoder_mlp_layers)]
        act = ACTIVATIONS.get(cfg.nonlinearity, nn.ELU)
        layers: list[nn.Module] = []
        in_size = math.prod(shape)
        for size in sizes:
            layers += [nn.Linear(in_size, size), act()]
            in_size = size
        self.mlp = nn.Sequential(*layers)
        self.value_head = nn.Linear(in_size, 1)

    def forward(self, state: Tensor) -> Tensor:
        x = state.float()
        if self.normalizer is not None:
            x = self.normalizer(x)
        return self.value_head(self.mlp(x.flatten(1))).squeeze(-1)


def central_value_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    """APPO's `make_model`: the env's actor-critic, and with `--central_value` the actor-critic on
    `actor_observation_space` plus the `CentralValue` of the state as the learner module
    "central_value".

    Raises:
        ConfigError: `--central_value` on an env without the state entry (`check_state_space`).
    """
    if not getattr(cfg, "central_value", False):
        return ModelParts(make_actor_critic(cfg, obs_space, action_space))
    check_state_space(cfg, obs_space)
    key = cfg.central_value_state_key
    actor = make_actor_critic(cfg, actor_observation_space(obs_space, key), action_space)
    assert isinstance(obs_space, gym.spaces.Dict)
    state_space = obs_space.spaces[key]
    assert isinstance(state_space, gym.spaces.Box)
    return ModelParts(actor, {CV_NAME: CentralValue(cfg, state_space)})


def _central_value_algorithms() -> list[str]:
    """The registered algorithms declaring `Capabilities.central_value`."""
    return [n for n in algorithm_names() if get_algorithm(n).capabilities.central_value]


def check_central_value_flags(cfg: Config) -> None:
    """Refuses what the central value does not support and its flags' ranges.

    Raises:
        ConfigError: --central_value with another --algo than APPO, with
            --central_value_use_rnn, or a central value flag out of range.
    """
    if cfg.central_value_use_rnn:
        raise ConfigError(
            "central_value_use_rnn",
            "a recurrent central value is not supported yet.",
            "pass --central_value_use_rnn=False (the central value is an MLP over the state).",
        )
    if not cfg.central_value:
        return
    if not get_algorithm(cfg.algo).capabilities.central_value:
        raise ConfigError(
            "central_value",
            f"the central value is implemented for --algo={' or '.join(_central_value_algorithms())} only, "
            f"not {cfg.algo}.",
            "pass --algo=APPO --with_vtrace=False, or --central_value=False.",
        )
    lr = cfg.central_value_learning_rate
    if lr is not None and not lr > 0:
        raise ConfigError("central_value_learning_rate", f"must be > 0 or None, got {lr}.", "e.g. 3e-4.")
    for name in ("central_value_mini_epochs", "central_value_minibatch_size"):
        v = getattr(cfg, name)
        if v is not None and (not isinstance(v, int) or v < 1):
            raise ConfigError(
                name, f"must be a positive integer or None, got {v!r}.", f"pass --{name}=N, N >= 1."
            )
    g = cfg.central_value_max_grad_norm
    if g is not None and not g >= 0:
        raise ConfigError("central_value_max_grad_norm", f"must be >= 0 or None, got {g}.", "e.g. 1.0.")
    if not cfg.central_value_state_key:
        raise ConfigError(
            "central_value_state_key", "must not be empty.", "e.g. --central_value_state_key=state."
        )


def check_env_state(cfg: Config) -> None:
    """With `--central_value`: makes the env once (then closes it) and checks its observation has
    the state entry (`check_state_space`); an env that cannot be made here is left to the run's
    start (its own error comes from there).

    Raises:
        ConfigError: the env's observation has no state entry.
    """
    if not cfg.central_value:
        return
    try:
        env = make_env(cfg)
    except Exception:  # noqa: BLE001 - the env's own error comes at the run's start
        return
    try:
        check_state_space(cfg, env.observation_space)
    finally:
        env.close()


def central_value_loss(
    values: Tensor, old_values: Tensor, targets: Tensor, valids: Tensor, clip: float | None
) -> Tensor:
    """rl_games' `common_losses.default_critic_loss` masked-averaged (`CentralValueTrain.calc_loss`):
    `max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)` with `clip` c, `(V - R)^2` when
    `clip` is None; mean over the valid samples. All args `[N]` float32; returns a scalar."""
    loss = (values - targets).pow(2)
    if clip is not None:
        v_clipped = old_values + (values - old_values).clamp(-clip, clip)
        loss = torch.max(loss, (v_clipped - targets).pow(2))
    return (loss * valids).sum() / valids.sum().clamp(min=1.0)


class CentralValueTrainer:
    """The learner's side of the central value: its values for GAE and its own training.

    Args:
        cfg: the run's config (the central value flags).
        module: the `CentralValue` (a learner module, saved under "learner_modules").
        device: where it trains.
        adam_eps, betas: Adam's settings (the run's).
    """

    def __init__(self, cfg: Config, module: CentralValue, device: torch.device, betas: tuple[float, float]):
        self.cfg, self.module = cfg, module
        self.optimizer = torch.optim.Adam(
            module.parameters(),
            lr=self.base_lr(cfg.learning_rate),
            betas=betas,
            eps=cfg.adam_eps,
            **_adam_impl(device),
        )

    def base_lr(self, policy_lr: float) -> float:
        """`central_value_learning_rate`, or the policy's learning rate when it is None."""
        lr = self.cfg.central_value_learning_rate
        return policy_lr if lr is None else float(lr)

    @torch.no_grad()
    def values(self, states: Tensor) -> Tensor:
        """The central value of states `[T, N, *state_shape]` -> `[T, N]` float32 (normalised units
        under `normalize_returns`), without autograd."""
        T, N = states.shape[:2]
        return self.module(states.reshape(T * N, *states.shape[2:])).reshape(T, N)

    def update_normalizer(self, states: Tensor, mask: Tensor) -> None:
        """Folds the states `[T, N, ...]` of the `mask` `[T, N]` bool steps into the input normaliser
        (with `central_value_normalize_input`)."""
        if self.module.normalizer is not None:
            self.module.normalizer.update(states[mask])

    def train(
        self, states: Tensor, old_values: Tensor, targets: Tensor, valids: Tensor, lr: float
    ) -> dict[str, float]:
        """`central_value_mini_epochs` passes of Adam steps over minibatches of
        `central_value_minibatch_size` samples drawn without replacement from the batch, as
        rl_games' `CentralValueTrain.train_net`.

        Args:
            states: `[T, N, *state_shape]` float32, the batch's states (not the bootstrap one).
            old_values: `[T, N]` the central value's own values before this update (for clipping).
            targets: `[T, N]` value targets (GAE's returns, normalised under `normalize_returns`).
            valids: `[T, N]` float32, 1 for the samples to learn from.
            lr: the learning rate of this batch.
        Returns:
            cv_loss (mean over the steps taken), cv_grad_norm, cv_lr, cv_value_mean.
        """
        cfg = self.cfg
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
        s, ov, tg, vd = flat(states), flat(old_values), flat(targets), flat(valids)
        # only the valid samples (another policy's steps, stale ones masked by max_policy_lag are
        # out): a minibatch without one would still move the weights through Adam's momentum
        keep = (vd > 0).nonzero().flatten()
        if keep.numel() < vd.numel():
            s, ov, tg, vd = s[keep], ov[keep], tg[keep], vd[keep]
        n = vd.shape[0]
        mb = cfg.central_value_minibatch_size or cfg.batch_size
        epochs = cfg.central_value_mini_epochs or cfg.ppo_epochs
        max_norm = (
            cfg.max_grad_norm if cfg.central_value_max_grad_norm is None else cfg.central_value_max_grad_norm
        )
        # PPO's value clip (APPO's section), read by name: the algorithm declaring the central value owns it
        clip = flag_value(cfg, "ppo_clip_value") if cfg.central_value_clip_value else None
        losses, norms = [], []
        for _ in range(epochs):
            perm = torch.randperm(n, device=s.device)
            for start in range(0, n, mb):
                idx = perm[start : start + mb]
                loss = central_value_loss(self.module(s[idx]), ov[idx], tg[idx], vd[idx], clip)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                norm = nn.utils.clip_grad_norm_(
                    self.module.parameters(), max_norm if max_norm > 0 else math.inf
                )
                if not bool(torch.isfinite(loss.detach()) & torch.isfinite(norm)):
                    self.optimizer.zero_grad(set_to_none=True)
                    continue
                self.optimizer.step()
                losses.append(loss.detach())
                norms.append(norm.detach())
        nan = torch.tensor(math.nan)
        return {
            "cv_loss": float(torch.stack(losses).mean()) if losses else float(nan),
            "cv_grad_norm": float(torch.stack(norms).mean()) if norms else float(nan),
            "cv_lr": lr,
            "cv_value_mean": float((ov * vd).sum() / vd.sum().clamp(min=1.0)),
        }


def split_state(b: TrajectoryBatch, key: str) -> None:
    """Moves the state entry of a batch's observations out: `b.cv_state` `[T+1, N, ...]`,
    `b.obs` the actor's part (`actor_obs`)."""
    obs = b.obs
    b.cv_state = obs[key]
    b.obs = actor_obs(obs, key)
