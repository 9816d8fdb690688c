"""R2D2's config section: its own flags (`--help` section "R2D2"), read with `surge.cfg.config.algo_params`."""

from __future__ import annotations

import math
from dataclasses import dataclass

from surge.cfg.config import param
from surge.errors import ConfigError
from surge.learning.replay_learner import (
    ReplayParams,
)


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
