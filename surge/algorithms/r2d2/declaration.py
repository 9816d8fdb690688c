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

from typing import Any

import torch
from torch import Tensor, nn

from surge.algorithms.r2d2.learner import R2D2Learner
from surge.algorithms.r2d2.model import R2D2Actor, make_r2d2_parts
from surge.algorithms.r2d2.params import R2D2Params
from surge.cfg.config import Config, algo_params
from surge.errors import ConfigError
from surge.learning.algorithm import ActContext, Algorithm, Capabilities, Feed, Obs, register_algorithm
from surge.learning.exploration import epsilon_greedy
from surge.learning.pg_checks import POLICY_GRADIENT_PARAMS
from surge.learning.q_flag_checks import refuse_idle_exploration_flags, refuse_idle_value_rescale_eps
from surge.learning.replay_learner import (
    check_replay_flags,
    replay_obs_bytes,
)
from surge.learning.replay_space_defaults import r2d2_space_defaults


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
        # the previous action and reward reach the core through ObsFeatures (rlpyt's R2D1)
        capabilities=Capabilities(prev_action_reward=True),
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
