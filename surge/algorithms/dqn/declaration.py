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

from typing import Any

import torch
from torch import Tensor, nn

from surge.algorithms.dqn.learner import DQNLearner
from surge.algorithms.dqn.model import DQNActor, make_dqn_parts
from surge.algorithms.dqn.params import DQNParams
from surge.cfg.config import Config, algo_params
from surge.errors import ConfigError
from surge.learning.algorithm import ActContext, Algorithm, Feed, Obs, register_algorithm
from surge.learning.exploration import epsilon_greedy
from surge.learning.pg_checks import POLICY_GRADIENT_PARAMS
from surge.learning.q_flag_checks import refuse_idle_exploration_flags, refuse_idle_priority_clip
from surge.learning.replay_learner import (
    check_replay_flags,
    replay_learner_bytes,
    replay_obs_bytes,
)
from surge.learning.replay_space_defaults import dqn_space_defaults


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
