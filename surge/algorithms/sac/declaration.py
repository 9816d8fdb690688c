"""Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications",
arXiv:1812.05905, Algorithm 1) on the engine: `--algo=SAC`, continuous Box actions, replay feed.

One update on a minibatch (actions in [-1, 1]^D, `surge.learning.qpg_common`), in
Stable-Baselines3's order, with α = exp(log α) read before its own step:

    ã, log π(ã|s) ~ π(·|s)                                  reparameterised, tanh-squashed (eq. 8)
    J(α) = mean −log α·(log π(ã|s) + H̄)                     temperature (eq. 18), when ent_coef=auto
    y = r + d·(min_k Q'k(s', a') − α log π(a'|s')), a' ~ π(·|s')   soft target (eqs. 3, 5)
    J_Q = ½ Σ_k mean (Q_k(s, a) − y)²                        (eq. 5, two critics)
    J_π = mean α log π(ã|s) − min_k Q_k(s, ã)               (eq. 7)
    θ' ← τθ + (1 − τ)θ' for both critics' target

d = γ (0 after a termination). Optimizers: "model" (the actor), "critic", "ent_coef" (log α).
"""

from __future__ import annotations

from surge.algorithms.sac.learner import sac_learner
from surge.algorithms.sac.model import sac_parts
from surge.algorithms.sac.params import SACParams
from surge.learning.qpg_common import (
    QPG_DEFAULTS,
    qpg_algorithm,
)

SAC = qpg_algorithm(
    "SAC",
    "soft actor-critic (Haarnoja et al. 2018): twin Q, learned temperature, tanh-squashed Gaussian",
    sac_learner,
    sac_parts,
    SACParams,
    {**QPG_DEFAULTS, "learning_rate": 3e-4},
    metric_tags={
        "ent_coef_loss": "losses/ent_coef_loss",
        "ent_coef": "train/ent_coef",
        "entropy": "train/entropy",
    },
)
