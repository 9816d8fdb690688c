"""DQN and its family, "Rainbow minus noisy nets" as rlpyt has it: `--algo=DQN` on the replay feed
(`surge.learning.replay_learner`).

- Q-learning target `y = R + d·max_a Q'(s', a)` (Mnih et al. 2015, eq. 2), or double DQN's
  `y = R + d·Q'(s', argmax_a Q(s', a))` (van Hasselt et al. 2016, eq. 4) with `--double_dqn`;
  `R`, `d` the n-step return and discount of the replay (Hessel et al. 2018, eq. 2;
  `--n_step_return`); Huber loss (Mnih et al. 2015, Methods), importance-weighted with
  `--prioritized_replay` (Schaul et al. 2016, Algorithm 1), whose priorities are |y − Q| clipped
  at `--priority_clip` (rlpyt's DQN clamps them at its Huber delta, 1: a transition's gradient under
  the Huber loss is clipped there too, so a larger error earns no larger update, and new
  transitions, which get the largest priority so far, then get 1 as rlpyt's default_priority).
- `--dueling`: `Q = V + A − mean_a A` (Wang et al. 2016, eq. 9); `--categorical`: C51's projected
  distributional target and cross-entropy loss (Bellemare et al. 2017, Algorithm 1) over
  `--num_atoms` atoms in `[--v_min, --v_max]`, priorities KL(m ‖ p) (Hessel et al. 2018, section 3).
- Target network `θ'`: every `--target_update_interval` env steps, `θ' ← τθ + (1 − τ)θ'` with
  τ = `--target_update_tau` (1: the hard copy of Mnih et al. 2015, Algorithm 1; Stable-Baselines3's
  rule). The check runs before the updates due after each observed block, so an interval shorter
  than a block acts once per block (as SB3 with train_freq larger than the interval).
- ε-greedy acting (`surge.learning.exploration`): ε goes linearly from
  `--exploration_initial_eps` to `--exploration_final_eps` over the first
  `--exploration_fraction` of `--train_for_env_steps` (env frames, read from
  `ActContext.env_frames`); with `--per_actor_eps`, actor i uses Ape-X's
  `ε_i = ε^(1 + α i/(N − 1))` (Horgan et al. 2018, section 4) instead. `eval_act` is greedy.

Flag names follow Stable-Baselines3 and rlpyt. The update's minibatch is `--batch_size`.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.algorithms.dqn.categorical import categorical_loss, categorical_projection, select_next_probs
from surge.algorithms.dqn.networks import QNetwork
from surge.cfg.config import Config, algo_params, param
from surge.errors import ConfigError
from surge.learning.algorithm import ActContext, Algorithm, Feed, ModelParts, Obs, register_algorithm
from surge.learning.exploration import epsilon_greedy, linear_schedule, per_actor_epsilon
from surge.learning.pg_checks import POLICY_GRADIENT_PARAMS
from surge.learning.q_flag_checks import refuse_idle_exploration_flags, refuse_idle_priority_clip
from surge.learning.q_learning import double_q_target, q_max_target, td_loss
from surge.learning.replay_learner import (
    ReplayLearnerBase,
    ReplayParams,
    check_replay_flags,
    replay_learner_bytes,
    replay_obs_bytes,
)
from surge.learning.replay_space_defaults import dqn_space_defaults
from surge.learning.target_networks import polyak_update


@dataclass
class DQNParams(ReplayParams):
    """DQN's section (`--help` "algorithm DQN"): the replay's flags (`ReplayParams`) and these."""

    target_update_interval: int = param(
        10_000, "Env steps between target-network updates (SB3's target_update_interval)."
    )
    target_update_tau: float = param(
        1.0, "Target update theta' <- tau theta + (1 - tau) theta' (1: hard copy; < 1: Polyak averaging)."
    )
    exploration_initial_eps: float = param(1.0, "Epsilon of epsilon-greedy at the start.")
    exploration_final_eps: float = param(0.05, "Epsilon after the exploration fraction.")
    exploration_fraction: float = param(
        0.1, "Fraction of --train_for_env_steps (env frames) over which epsilon decays linearly."
    )
    per_actor_eps: bool = param(
        False, "Ape-X per-actor epsilon eps_i = base^(1 + alpha i/(N-1)) instead of the schedule."
    )
    per_actor_eps_base: float = param(0.4, "--per_actor_eps: the base epsilon (Ape-X: 0.4).")
    per_actor_eps_alpha: float = param(7.0, "--per_actor_eps: the exponent alpha (Ape-X: 7).")
    double_dqn: bool = param(False, "Double DQN target (van Hasselt et al. 2016).")
    dueling: bool = param(False, "Dueling head (Wang et al. 2016).")
    categorical: bool = param(False, "Categorical (C51) distributional Q (Bellemare et al. 2017).")
    num_atoms: int = param(51, "--categorical: atoms of the support.")
    v_min: float = param(-10.0, "--categorical: lowest return of the support.")
    v_max: float = param(10.0, "--categorical: highest return of the support.")
    dqn_loss: str = param(
        "huber", "TD loss of the scalar head: huber (SB3, Nature DQN) or mse.", ("huber", "mse")
    )
    priority_clip: float = param(
        1.0,
        "--prioritized_replay with the scalar head and the Huber loss: |TD error| is clipped at this "
        "value before it becomes a priority (rlpyt's delta_clip, the Huber loss's delta 1); 0: unclipped.",
    )

    def validate(self) -> None:
        """Raises `ConfigError` naming a flag out of range (before any process starts)."""
        super().validate()
        checks = [
            (
                "target_update_interval",
                self.target_update_interval >= 1,
                "e.g. --target_update_interval=10000.",
            ),
            ("target_update_tau", 0.0 < self.target_update_tau <= 1.0, "use a value in (0, 1]."),
            ("exploration_initial_eps", 0.0 <= self.exploration_initial_eps <= 1.0, "use a value in [0, 1]."),
            ("exploration_final_eps", 0.0 <= self.exploration_final_eps <= 1.0, "use a value in [0, 1]."),
            ("exploration_fraction", 0.0 <= self.exploration_fraction <= 1.0, "use a value in [0, 1]."),
            ("per_actor_eps_base", 0.0 <= self.per_actor_eps_base <= 1.0, "use a value in [0, 1]."),
            (
                "priority_clip",
                math.isfinite(self.priority_clip) and self.priority_clip >= 0.0,
                "use 0 (unclipped) or a positive value, e.g. 1.",
            ),
            ("num_atoms", not self.categorical or self.num_atoms >= 2, "use 2 atoms or more, e.g. 51."),
            (
                "v_max",
                math.isfinite(self.v_min) and math.isfinite(self.v_max) and self.v_min < self.v_max,
                "use finite --v_min < --v_max.",
            ),
        ]
        for name, ok, fix in checks:
            if not ok:
                raise ConfigError(name, f"is out of range: {getattr(self, name)!r}.", fix)


class DQNActor(nn.Module):
    """The acting module: the online `QNetwork` (`q`) and the exploration schedule (plain
    attributes, rebuilt from the config in every process; not in the state)."""

    def __init__(self, q: QNetwork, p: DQNParams, train_frames: int):
        super().__init__()
        self.q = q
        self.rnn_state_size: int = q.rnn_state_size
        self.eps = linear_schedule(
            p.exploration_initial_eps, p.exploration_final_eps, int(p.exploration_fraction * train_frames)
        )
        self.per_actor = p.per_actor_eps
        self.per_actor_base, self.per_actor_alpha = p.per_actor_eps_base, p.per_actor_eps_alpha

    def epsilon(self, ctx: ActContext) -> float | Tensor:
        """ε for the agents of `ctx`: `[B]` per actor with `--per_actor_eps` (where actor ids are
        known), else the schedule's at `ctx.env_frames`."""
        if self.per_actor and ctx.actor_ids is not None and ctx.num_actors > 0:
            return per_actor_epsilon(ctx.actor_ids, ctx.num_actors, self.per_actor_base, self.per_actor_alpha)
        return self.eps(ctx.env_frames)


def make_dqn_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    """`Algorithm.make_model`: the `DQNActor` acts; its target network (a frozen copy of the
    QNetwork) is the learner's "target".

    Raises:
        EnvError: a non-Discrete action space.
    """
    p = algo_params(cfg, DQNParams)
    q = QNetwork(
        cfg,
        obs_space,
        action_space,
        dueling=p.dueling,
        num_atoms=p.num_atoms if p.categorical else 1,
        v_min=p.v_min,
        v_max=p.v_max,
    )
    target = copy.deepcopy(q).requires_grad_(False)
    return ModelParts(DQNActor(q, p, cfg.train_for_env_steps), {"target": target})


@torch.no_grad()
def dqn_act(model: nn.Module, obs: Obs | None, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """`Algorithm.act`: ε-greedy actions `[B]` int64 over the legal ones (greedy when
    `ctx.deterministic`), and the state after the step `[B, rnn_state_size]`."""
    assert obs is not None and isinstance(model, DQNActor)
    out = model.q(obs, rnn_states)
    eps = 0.0 if ctx.deterministic else model.epsilon(ctx)
    if isinstance(eps, Tensor):
        eps = eps.to(out.q_values.device)
    actions = epsilon_greedy(out.q_values, eps, out.action_mask)
    states = out.rnn_states if out.rnn_states is not None else rnn_states
    return {"actions": actions, "rnn_states": states}


def dqn_eval_act(model: nn.Module, obs: Obs | None, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """`Algorithm.eval_act`: the greedy action."""
    return dqn_act(model, obs, rnn_states, ActContext(deterministic=True))


class DQNLearner(ReplayLearnerBase):
    """One update of the module docstring's loss per `update`; the target network is
    `learner_modules["target"]`."""

    params_type = DQNParams
    params: DQNParams

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.target: QNetwork = self.learner_modules["target"]  # type: ignore[assignment]
        self.target_syncs = 0  # target updates so far (env_steps // target_update_interval)

    @property
    def online(self) -> QNetwork:
        return self.model.q  # type: ignore[return-value]

    def sync_target(self) -> bool:
        """Updates the target network when `env_steps` crossed a multiple of
        `target_update_interval` since the last update (once however many it crossed); True if it did."""
        k = self.env_steps // self.params.target_update_interval
        if k <= self.target_syncs:
            return False
        polyak_update(self.target, self.online, self.params.target_update_tau)
        self.target_syncs = k
        return True

    def train_replay(self, env_frames: int = 0) -> dict[str, float] | None:
        """The target update due (`sync_target`), then `ReplayLearnerBase.train_replay`, plus
        epsilon (the schedule's at `env_frames`; not reported with `--per_actor_eps`, where each
        actor has its own, constant one) and target_updates."""
        self.sync_target()
        out = super().train_replay(env_frames)
        if out is not None:
            out.update(target_updates=float(self.target_syncs))
            if not self.model.per_actor:
                out.update(epsilon=float(self.model.eps(env_frames)))  # type: ignore[operator]
        return out

    def losses(self, s: dict[str, Any]) -> tuple[Tensor, Tensor, Tensor]:
        """(loss scalar, priorities `[B]` without gradient, Q(s, a) `[B]` without gradient) of a
        sample of `ReplayLearnerBase.sample` (obs, actions, returns, discounts, next_obs,
        is_weights); see the module docstring."""
        p = self.params
        actions = s["actions"].long().reshape(-1)
        rows = torch.arange(actions.shape[0], device=actions.device)
        out = self.online(s["obs"])
        with torch.no_grad():
            nxt = self.target(s["next_obs"])
            select = self.online(s["next_obs"]).q_values if p.double_dqn else nxt.q_values
            mask = nxt.action_mask
        if p.categorical:
            assert out.log_probs is not None and nxt.log_probs is not None
            if mask is not None:
                select = select.masked_fill(~mask.bool(), float("-inf"))
            next_probs = select_next_probs(nxt.log_probs.exp(), select)
            m = categorical_projection(next_probs, s["returns"], s["discounts"], p.v_min, p.v_max)
            c = categorical_loss(out.log_probs[rows, actions], m, s["is_weights"])
            return c.loss, c.kl, out.q_values.detach()[rows, actions]
        if p.double_dqn:
            y = double_q_target(select, nxt.q_values, s["returns"], s["discounts"], mask)
        else:
            y = q_max_target(nxt.q_values, s["returns"], s["discounts"], mask)
        q_taken = out.q_values[rows, actions]
        t = td_loss(q_taken, y, s["is_weights"], p.dqn_loss)
        return t.loss, t.abs_td_errors, q_taken.detach()

    def priorities(self, errors: Tensor) -> Tensor:
        """The new priorities `[B]` of a sample from `losses`' errors `[B]`: |TD errors| clipped at
        `--priority_clip` (scalar head with the Huber loss; 0: unclipped), else unchanged (C51's KL;
        the mse loss, whose gradient is not clipped either, as rlpyt clamps only with its Huber loss)."""
        clip = self.params.priority_clip
        if self.params.categorical or self.params.dqn_loss != "huber" or clip <= 0:
            return errors
        return errors.clamp(max=clip)

    def update(self, samples: dict[str, Any]) -> dict[str, float]:
        """One Adam step on `losses` (`apply_gradients`: clipping, non-finite skip,
        policy_version); writes samples["td_errors"] (`priorities`) for prioritized replay.
        td_abs_mean is the mean error before clipping."""
        loss, errors, q_taken = self.losses(samples)
        grad_norm = self.apply_gradients(loss)
        samples["td_errors"] = self.priorities(errors)
        return {
            "loss": float(loss.detach()),
            "q_mean": float(q_taken.mean()),
            "td_abs_mean": float(errors.mean()),
            "grad_norm": float(grad_norm),
        }

    def state_dict(self) -> dict[str, Any]:
        """`ReplayLearnerBase.state_dict` plus target_syncs."""
        out = super().state_dict()
        out["target_syncs"] = self.target_syncs
        return out

    def load_state_dict(self, state: dict[str, Any], keep_version: bool = False) -> None:
        super().load_state_dict(state, keep_version)
        if not keep_version and "target_syncs" in state:
            self.target_syncs = int(state["target_syncs"])


def validate_dqn(cfg: Config) -> None:
    """Raises `ConfigError` for a recurrent core (R2D2 is a separate algorithm), for an epsilon
    schedule over the default, unbounded `--train_for_env_steps` (epsilon would stay near its
    initial value for the whole run), for the flags `check_replay_flags` refuses, and for the epsilon
    flags `--per_actor_eps` makes idle and an idle `--priority_clip` (`surge.learning.q_flag_checks`)."""
    check_replay_flags(cfg, "DQN")
    p = algo_params(cfg, DQNParams)
    refuse_idle_exploration_flags(cfg, p, "DQN")
    refuse_idle_priority_clip(cfg, p, "DQN")
    schedule = p.exploration_fraction > 0 and p.exploration_initial_eps != p.exploration_final_eps
    if schedule and not p.per_actor_eps and cfg.train_for_env_steps >= int(1e10):
        raise ConfigError(
            "train_for_env_steps",
            "DQN's epsilon decays over --exploration_fraction of --train_for_env_steps, which is not "
            "set (1e10 frames): epsilon would stay near --exploration_initial_eps for the whole run.",
            "pass --train_for_env_steps (e.g. 100000 for CartPole), or --exploration_fraction=0 for a "
            "constant --exploration_final_eps, or --per_actor_eps=True.",
        )
    if cfg.use_rnn:
        raise ConfigError(
            "use_rnn", "DQN is feed-forward.", "use --use_rnn=False (R2D2 has the recurrent core)."
        )


def dqn_replay_bytes(cfg: Config, info: Any) -> int:
    """`Algorithm.replay_bytes`: `--replay_size` transitions of the observation's bytes (one
    frame's with frame storage, `replay_obs_bytes`)."""
    p = algo_params(cfg, DQNParams)
    return replay_learner_bytes(p, replay_obs_bytes(cfg, p, info.observation_space))


DQN = register_algorithm(
    Algorithm(
        name="DQN",
        description="DQN with double, dueling, categorical, n-step, prioritized (Rainbow minus noisy nets)",
        step_fields=lambda action_space: [],
        act=dqn_act,
        eval_act=dqn_eval_act,
        make_learner=DQNLearner,
        make_model=make_dqn_parts,
        feed=Feed.REPLAY,
        params=DQNParams,
        replay_bytes=dqn_replay_bytes,
        validate=validate_dqn,
        default_overrides={
            # Stable-Baselines3's DQN defaults
            "batch_size": 32,
            "learning_rate": 1e-4,
            "max_grad_norm": 10.0,
            "adam_eps": 1e-8,
            # a constant rate, as SB3's and rlpyt's DQN: the Atari family's PPO default (linear
            # decay to 0) halved the rate by mid-run in the 2M-frame Breakout comparison
            "lr_schedule": "constant",
            "use_rnn": False,
            "normalize_input": False,
            "nonlinearity": "relu",
            "encoder_mlp_layers": [64, 64],
        },
        unused_params=POLICY_GRADIENT_PARAMS,
        space_defaults=dqn_space_defaults,
        metric_tags={
            "loss": "losses/td_loss",
            "q_mean": "train/q_mean",
            "td_abs_mean": "train/td_abs_mean",
            "grad_norm": "losses/grad_norm",
            "epsilon": "train/epsilon",
            "target_updates": "train/target_updates",
            "replay_size": "train/replay_size",
            "updates": "train/updates",
            "policy_lag_avg": "train/policy_lag_avg",
            "policy_lag_max": "train/policy_lag_max",
            "policy_version": "train/policy_version",
        },
    )
)
