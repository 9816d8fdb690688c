"""DQN's config section: its own flags (`--help` section "DQN"), read with `surge.cfg.config.algo_params`."""

from __future__ import annotations

import math
from dataclasses import dataclass

from surge.cfg.config import param
from surge.errors import ConfigError
from surge.learning.replay_learner import (
    ReplayParams,
)


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
