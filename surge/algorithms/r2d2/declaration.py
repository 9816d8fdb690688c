"""R2D2 (Kapturowski et al. 2019, "Recurrent Experience Replay in Distributed Reinforcement
Learning"; R2D1 in rlpyt): `--algo=R2D2` on the replay feed (`surge.learning.replay_learner`).

- A recurrent Q-network (`surge.algorithms.dqn.networks.QNetwork` with a GRU/LSTM core, `--rnn_type`,
  `--hidden_size`; dueling head with `--dueling`, Wang et al. 2016 eq. 9).
- Sequence replay (`surge.replay.sequence.SequenceReplay`): each sample is a sequence of
  `--burn_in` + `--sequence_length` + (`--n_step_return` − 1) env steps of one actor, starting every
  `--store_rnn_state_interval` steps, with the recurrent state the actor acted on at its first step
  ("stored state", section 3). Sequences run across episode ends; the state restarts from zeros
  after a terminated or truncated step, as it did when acting.
- Burn-in (section 3): the first `--burn_in` steps only unroll the stored state, without gradient,
  for the online and the target network alike; the loss is on the next `--sequence_length` steps.
- Target, per learning step t (section 2, "n-step double Q-learning with value rescaling"):

      y_t = h( Σ_{k<n} γ^k r_{t+k} + γ^n · h⁻¹( Q'(s_{t+n}, argmax_a Q(s_{t+n}, a)) ) )

  with `h(x) = sign(x)(√(|x|+1) − 1) + εx` (ε = `--value_rescale_eps`; Pohlen et al. 2018, and
  its exact inverse, `surge.learning.q_learning`), Q the online and Q' the target network
  unrolled over the same sequence; double Q (van Hasselt et al. 2016, eq. 4) with `--double_dqn`,
  else `max_a Q'`. The window stops at the first terminated (discount 0) or truncated step
  (bootstrapping from that step's own observation, `surge.replay.n_step`).
- Loss: `Σ_{t,i} m_{t,i} w_i ℓ(y_{t,i} − Q(s_t, a_t)) / Σ m` (rlpyt's valid mean) with ℓ = ½x²
  (`--r2d2_loss=mse`, rlpyt's default) or Huber, w_i the importance weight of sequence i
  (Schaul et al. 2016, eq. 2; 1 without `--prioritized_replay`) and m the learning steps whose
  window is active (steps of this policy).
- Priorities (section 2.3): `p_i = η max_t |δ_{t,i}| + (1 − η) mean_t |δ_{t,i}|` over the
  sequence's learning steps (η = `--priority_eta`), then `p^α` (`--pri_alpha`).
- Acting: ε-greedy with Ape-X's per-actor `ε_i = ε^(1 + α i/(N − 1))` (ε = 0.4, α = 7; section
  2.3 of R2D2, Horgan et al. 2018 section 4) by default (`--per_actor_eps`), or DQN's linear
  schedule; `eval_act` is greedy. The recurrent state is carried by inference as for APPO.
- Target network: every `--target_update_interval` env steps, `θ' ← τθ + (1 − τ)θ'`.

`--batch_size` counts sequences (R2D2: 64); `--replay_ratio` is gradient updates per env step as
for DQN; `--replay_size` counts env steps over all actors.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from surge.algorithms.dqn.networks import QNetwork
from surge.cfg.config import Config, algo_params, param
from surge.data.trajectory import tree_map
from surge.errors import ConfigError
from surge.learning.algorithm import ActContext, Algorithm, Feed, ModelParts, Obs, register_algorithm
from surge.learning.exploration import epsilon_greedy, linear_schedule, per_actor_epsilon
from surge.learning.pg_checks import POLICY_GRADIENT_PARAMS
from surge.learning.q_flag_checks import refuse_idle_exploration_flags, refuse_idle_value_rescale_eps
from surge.learning.q_learning import inverse_value_rescale, nstep_returns, value_rescale
from surge.learning.replay_learner import (
    ReplayLearnerBase,
    ReplayParams,
    check_replay_flags,
    replay_obs_bytes,
)
from surge.learning.replay_space_defaults import r2d2_space_defaults
from surge.learning.target_networks import polyak_update
from surge.replay.sequence import SequenceReplay


@dataclass
class R2D2Params(ReplayParams):
    """R2D2's section (`--help` "algorithm R2D2"): the replay's flags (`ReplayParams`; n-step and
    prioritized replay with R2D2's defaults), DQN's that mean the same here, and the sequence flags
    (names from rlpyt's R2D1 where it has them)."""

    # ReplayParams' fields with R2D2's defaults (Kapturowski et al. 2019, Table 2)
    n_step_return: int = param(5, "n of the n-step return (R2D2: 5).")
    prioritized_replay: bool = param(
        True, "Prioritized sequence replay (R2D2, section 2.3; Schaul et al. 2016) instead of uniform."
    )
    pri_alpha: float = param(0.9, "Prioritized replay: priority exponent alpha (R2D2: 0.9).")
    pri_beta_init: float = param(
        0.6,
        "Prioritized replay: importance-weight exponent beta at the start (R2D2: 0.6, held fixed; "
        "here annealed linearly to 1 over --pri_beta_steps).",
    )
    burn_in: int = param(
        40,
        "Steps of a sequence that only warm up the stored RNN state, without gradient (rlpyt's warmup_T; R2D2: 40).",
    )
    sequence_length: int = param(
        80, "Steps of a sequence trained on after the burn-in (rlpyt's batch_T; R2D2's m = 80)."
    )
    store_rnn_state_interval: int = param(
        40,
        "Env steps between sequence starts, i.e. stored RNN states (rlpyt; R2D2: 40, adjacent sequences overlap).",
    )
    priority_eta: float = param(
        0.9, "Sequence priority eta * max|td| + (1 - eta) * mean|td| (rlpyt's eta; R2D2: 0.9)."
    )
    value_rescale: bool = param(True, "Value rescaling h(x) of the n-step targets (R2D2, section 2).")
    value_rescale_eps: float = param(
        1e-3, "epsilon of h(x) = sign(x)(sqrt(|x|+1) - 1) + epsilon x (rlpyt's value_scale_eps)."
    )
    r2d2_loss: str = param(
        "mse", "Loss of the TD errors: mse (0.5 x^2, rlpyt's R2D1) or huber.", ("mse", "huber")
    )
    target_update_interval: int = param(2500, "Env steps between target-network updates.")
    target_update_tau: float = param(
        1.0, "Target update theta' <- tau theta + (1 - tau) theta' (1: hard copy)."
    )
    double_dqn: bool = param(True, "Double Q target (van Hasselt et al. 2016; R2D2 uses it).")
    dueling: bool = param(True, "Dueling head (Wang et al. 2016; R2D2 uses it).")
    per_actor_eps: bool = param(
        True, "Per-actor epsilon eps_i = base^(1 + alpha i/(N-1)) (R2D2, Ape-X) instead of the schedule."
    )
    per_actor_eps_base: float = param(0.4, "--per_actor_eps: the base epsilon (R2D2: 0.4).")
    per_actor_eps_alpha: float = param(7.0, "--per_actor_eps: the exponent alpha (R2D2: 7).")
    exploration_initial_eps: float = param(1.0, "--per_actor_eps=False: epsilon at the start.")
    exploration_final_eps: float = param(
        0.05, "--per_actor_eps=False: epsilon after the exploration fraction."
    )
    exploration_fraction: float = param(
        0.1, "--per_actor_eps=False: fraction of --train_for_env_steps (env frames) of the linear decay."
    )

    def validate(self) -> None:
        """Raises `ConfigError` naming a flag out of range (before any process starts)."""
        super().validate()
        checks = [
            ("burn_in", self.burn_in >= 0, "use 0 or more steps, e.g. --burn_in=40."),
            ("sequence_length", self.sequence_length >= 1, "e.g. --sequence_length=80."),
            (
                "store_rnn_state_interval",
                self.store_rnn_state_interval >= 1,
                "e.g. --store_rnn_state_interval=40.",
            ),
            ("priority_eta", 0.0 <= self.priority_eta <= 1.0, "use a value in [0, 1], e.g. 0.9."),
            (
                "value_rescale_eps",
                math.isfinite(self.value_rescale_eps) and self.value_rescale_eps >= 0,
                "use a value >= 0, e.g. 0.001.",
            ),
            (
                "target_update_interval",
                self.target_update_interval >= 1,
                "e.g. --target_update_interval=2500.",
            ),
            ("target_update_tau", 0.0 < self.target_update_tau <= 1.0, "use a value in (0, 1]."),
            ("per_actor_eps_base", 0.0 <= self.per_actor_eps_base <= 1.0, "use a value in [0, 1]."),
            ("exploration_initial_eps", 0.0 <= self.exploration_initial_eps <= 1.0, "use a value in [0, 1]."),
            ("exploration_final_eps", 0.0 <= self.exploration_final_eps <= 1.0, "use a value in [0, 1]."),
            ("exploration_fraction", 0.0 <= self.exploration_fraction <= 1.0, "use a value in [0, 1]."),
        ]
        for name, ok, fix in checks:
            if not ok:
                raise ConfigError(name, f"is out of range: {getattr(self, name)!r}.", fix)


class R2D2Actor(nn.Module):
    """The acting module: the online recurrent `QNetwork` (`q`) and the exploration rule (plain
    attributes rebuilt from the config in every process; not in the state)."""

    def __init__(self, q: QNetwork, p: R2D2Params, train_frames: int):
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
        known; else the base ε), or the schedule's at `ctx.env_frames`."""
        if self.per_actor:
            if ctx.actor_ids is not None and ctx.num_actors > 0:
                return per_actor_epsilon(
                    ctx.actor_ids, ctx.num_actors, self.per_actor_base, self.per_actor_alpha
                )
            return self.per_actor_base
        return self.eps(ctx.env_frames)


def make_r2d2_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    """`Algorithm.make_model`: the `R2D2Actor` (recurrent QNetwork) acts; its frozen copy is the
    learner's "target".

    Raises:
        EnvError: a non-Discrete action space.
    """
    p = algo_params(cfg, R2D2Params)
    q = QNetwork(cfg, obs_space, action_space, dueling=p.dueling, use_rnn=True)
    target = copy.deepcopy(q).requires_grad_(False)
    return ModelParts(R2D2Actor(q, p, cfg.train_for_env_steps), {"target": target})


@torch.no_grad()
def r2d2_act(model: nn.Module, obs: Obs | None, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """`Algorithm.act`: ε-greedy actions `[B]` int64 (greedy when `ctx.deterministic`) and the
    recurrent state after the step `[B, rnn_state_size]`."""
    assert obs is not None and isinstance(model, R2D2Actor)
    out = model.q(obs, rnn_states)
    eps = 0.0 if ctx.deterministic else model.epsilon(ctx)
    if isinstance(eps, Tensor):
        eps = eps.to(out.q_values.device)
    actions = epsilon_greedy(out.q_values, eps, out.action_mask)
    assert out.rnn_states is not None
    return {"actions": actions, "rnn_states": out.rnn_states}


def r2d2_eval_act(
    model: nn.Module, obs: Obs | None, rnn_states: Tensor, ctx: ActContext
) -> dict[str, Tensor]:
    """`Algorithm.eval_act`: the greedy action."""
    return r2d2_act(model, obs, rnn_states, ActContext(deterministic=True))


class R2D2Learner(ReplayLearnerBase):
    """One update of the module docstring's loss per `update`, on `--batch_size` sequences of a
    `SequenceReplay`; the target network is `learner_modules["target"]`."""

    params_type = R2D2Params
    params: R2D2Params
    replay: SequenceReplay  # type: ignore[assignment]
    stores_rnn_states = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.target: QNetwork = self.learner_modules["target"]  # type: ignore[assignment]
        self.target_syncs = 0

    @property
    def online(self) -> QNetwork:
        return self.model.q  # type: ignore[return-value]

    def make_replay(self) -> SequenceReplay:  # type: ignore[override]
        """A `SequenceReplay` of about `--replay_size` steps over `num_columns` columns (rows per
        column a multiple of `--store_rnn_state_interval`, at least a sequence plus a rollout
        plus one interval); priorities with `--pri_alpha`, or all equal (alpha 0) without
        `--prioritized_replay`."""
        p = self.params
        stride = p.store_rnn_state_interval
        seq = p.burn_in + p.sequence_length + p.n_step_return - 1
        history = max(self.frame_stack - 1, 0)
        rows = max(-(-p.replay_size // self.num_columns) + 1, seq + self.cfg.rollout + 1 + stride) + history
        rows = -(-rows // stride) * stride
        return SequenceReplay(
            rows,
            self.num_columns,
            p.burn_in,
            p.sequence_length,
            stride,
            lookahead=p.n_step_return - 1,
            frame_stack=self.frame_stack,
            alpha=p.pri_alpha if p.prioritized_replay else 0.0,
            beta0=p.pri_beta_init,
            beta_steps=p.pri_beta_steps,
            eta=p.priority_eta,
        )

    def updates_due(self) -> int:
        """`ReplayLearnerBase.updates_due`, or 0 while no sequence is complete yet."""
        if self.replay.priorities.tree.total <= 0:
            return 0
        return super().updates_due()

    def sample(self) -> dict[str, Any]:
        """`batch_size` sequences (`SequenceReplay.sample`) on `self.device`, with lag `[L, B]`
        (policy versions of the learning steps)."""
        p, ring = self.params, self.replay.ring
        s = self.replay.sample(self.cfg.batch_size, self.generator, env_steps=self.env_steps)
        k = torch.arange(p.burn_in, p.burn_in + p.sequence_length)[:, None]
        rows = (s["starts"][None] + k) % ring.capacity
        s["lag"] = (self.policy_version - self.versions[rows, s["columns"][None].expand_as(rows)]).float()
        return tree_map(lambda x: x.to(self.device, non_blocking=True), s)

    def sync_target(self) -> bool:
        """Updates the target network when `env_steps` crossed a multiple of
        `target_update_interval` since the last update; True if it did."""
        k = self.env_steps // self.params.target_update_interval
        if k <= self.target_syncs:
            return False
        polyak_update(self.target, self.online, self.params.target_update_tau)
        self.target_syncs = k
        return True

    def train_replay(self, env_frames: int = 0) -> dict[str, float] | None:
        """The target update due, then `ReplayLearnerBase.train_replay`, plus target_updates."""
        self.sync_target()
        out = super().train_replay(env_frames)
        if out is not None:
            out["target_updates"] = float(self.target_syncs)
        return out

    def losses(self, s: dict[str, Any]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(loss scalar, |δ| `[L, B]` without gradient, mask `[L, B]` bool of the learning steps
        that count, Q(s_t, a_t) `[L, B]` without gradient) of a sample of `sample`; see the module
        docstring. L = `--sequence_length`."""
        p = self.params
        b, L, n = p.burn_in, p.sequence_length, p.n_step_return
        term, trunc = s["terminated"].bool(), s["truncated"].bool()
        S, B = term.shape
        dones = torch.zeros(S + 1, B, device=term.device)
        dones[:S] = (term | trunc).float()
        states = s["rnn_states"][None]
        out = self.online.sequence(s["obs"], states, dones, b)  # rows b .. S
        with torch.no_grad():
            tgt = self.target.sequence(s["obs"], states, dones, b)
        # n-step windows of the learning steps b .. b+L-1: [L*B, n], row-major over (t, i)
        win = torch.arange(n, device=term.device)[None] + torch.arange(b, b + L, device=term.device)[:, None]
        rew = s["rewards"][win].permute(0, 2, 1).reshape(L * B, n)
        te = term[win].permute(0, 2, 1).reshape(L * B, n)
        tr = trunc[win].permute(0, 2, 1).reshape(L * B, n)
        returns, discounts, used = nstep_returns(rew, te, tr, self.hp.gamma)
        trunc_last = tr.gather(1, (used - 1).clamp(min=0)[:, None]).squeeze(1) & (discounts > 0)
        j = torch.arange(L, device=term.device).repeat_interleave(B)
        col = torch.arange(B, device=term.device).repeat(L)
        nxt = j + used - trunc_last.long()  # the bootstrap row, relative to b
        with torch.no_grad():
            q_next_t = tgt.q_values[nxt, col]
            if p.double_dqn:
                select = out.q_values.detach()[nxt, col]
            else:
                select = q_next_t
            if out.action_mask is not None:
                select = select.masked_fill(~out.action_mask[nxt, col].bool(), float("-inf"))
            boot = q_next_t.gather(1, select.argmax(1, keepdim=True)).squeeze(1)
            boot = torch.where(discounts == 0, torch.zeros_like(boot), boot)
            if p.value_rescale:
                eps = p.value_rescale_eps
                y = value_rescale(returns + discounts * inverse_value_rescale(boot, eps), eps)
            else:
                y = returns + discounts * boot
            y = y.view(L, B)
            active = s["is_active"][win].permute(0, 2, 1).reshape(L * B, n)
            inside = torch.arange(n, device=term.device)[None] < used[:, None]
            mask = (active | ~inside).all(1).view(L, B)
        actions = s["actions"][b : b + L].long().reshape(L, B)
        q_taken = out.q_values[:L].gather(2, actions[..., None]).squeeze(2)
        delta = y - q_taken
        if p.r2d2_loss == "huber":
            per = F.huber_loss(q_taken, y, reduction="none")
        else:
            per = 0.5 * delta**2
        m = mask.float()
        loss = (per * s["is_weights"][None] * m).sum() / m.sum().clamp(min=1.0)
        return loss, delta.detach().abs(), mask, q_taken.detach()

    def update(self, samples: dict[str, Any]) -> dict[str, float]:
        """One Adam step on `losses` (`apply_gradients`), then the sampled sequences' priorities
        (`SequenceReplay.update_priorities`: η·max + (1 − η)·mean of |δ| over the masked steps)."""
        loss, td_abs, mask, q_taken = self.losses(samples)
        grad_norm = self.apply_gradients(loss)
        self.replay.update_priorities(samples["indices"].cpu(), td_abs.cpu(), mask.cpu())
        m = mask.float()
        n = m.sum().clamp(min=1.0)
        return {
            "loss": float(loss.detach()),
            "q_mean": float((q_taken * m).sum() / n),
            "td_abs_mean": float((td_abs * m).sum() / n),
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


def validate_r2d2(cfg: Config) -> None:
    """Raises `ConfigError` for a feed-forward core (`--use_rnn=False`), for a linear ε schedule
    over the default, unbounded `--train_for_env_steps`, for what `check_replay_flags` refuses,
    and for a flag that `--per_actor_eps` or `--value_rescale=False` makes idle
    (`surge.learning.q_flag_checks`)."""
    check_replay_flags(cfg, "R2D2")
    p = algo_params(cfg, R2D2Params)
    refuse_idle_exploration_flags(cfg, p, "R2D2")
    refuse_idle_value_rescale_eps(cfg, p)
    if not cfg.use_rnn:
        raise ConfigError("use_rnn", "R2D2's Q-network is recurrent.", "use --use_rnn=True, or --algo=DQN.")
    schedule = p.exploration_fraction > 0 and p.exploration_initial_eps != p.exploration_final_eps
    if not p.per_actor_eps and schedule and cfg.train_for_env_steps >= int(1e10):
        raise ConfigError(
            "train_for_env_steps",
            "R2D2's epsilon schedule (--per_actor_eps=False) decays over --exploration_fraction of "
            "--train_for_env_steps, which is not set.",
            "pass --train_for_env_steps, or --per_actor_eps=True (R2D2's default).",
        )


def r2d2_replay_bytes(cfg: Config, info: Any) -> int:
    """`Algorithm.replay_bytes`: `--replay_size` steps of the observation's bytes (one frame's with
    frame storage, `replay_obs_bytes`), the stored
    recurrent state (`hidden_size` float32, twice for an LSTM) and ~32 bytes of per-step fields."""
    p = algo_params(cfg, R2D2Params)
    obs_bytes = replay_obs_bytes(cfg, p, info.observation_space)
    state = cfg.hidden_size * cfg.rnn_num_layers * (2 if cfg.rnn_type == "lstm" else 1) * 4
    return int(p.replay_size) * (int(obs_bytes) + state + 32)


R2D2 = register_algorithm(
    Algorithm(
        name="R2D2",
        description="R2D2: recurrent Q-network, sequence replay with burn-in, value rescaling (Kapturowski et al. 2019)",
        step_fields=lambda action_space: [],
        act=r2d2_act,
        eval_act=r2d2_eval_act,
        make_learner=R2D2Learner,
        make_model=make_r2d2_parts,
        feed=Feed.REPLAY,
        params=R2D2Params,
        replay_bytes=r2d2_replay_bytes,
        validate=validate_r2d2,
        default_overrides={
            # R2D2's (Kapturowski et al. 2019, Table 2) where they do not depend on Atari's scale
            "batch_size": 64,
            "learning_rate": 1e-4,
            "adam_eps": 1e-3,
            "max_grad_norm": 40.0,
            "lr_schedule": "constant",  # R2D2's Adam rate is constant; Atari's family default decays it
            "gamma": 0.997,
            "use_rnn": True,
            "rnn_type": "lstm",
            "normalize_input": False,
            "nonlinearity": "relu",
        },
        unused_params=(*POLICY_GRADIENT_PARAMS, "recurrence"),
        space_defaults=r2d2_space_defaults,
        metric_tags={
            "loss": "losses/td_loss",
            "q_mean": "train/q_mean",
            "td_abs_mean": "train/td_abs_mean",
            "grad_norm": "losses/grad_norm",
            "target_updates": "train/target_updates",
            "replay_size": "train/replay_size",
            "updates": "train/updates",
            "policy_lag_avg": "train/policy_lag_avg",
            "policy_lag_max": "train/policy_lag_max",
            "policy_version": "train/policy_version",
        },
    )
)
