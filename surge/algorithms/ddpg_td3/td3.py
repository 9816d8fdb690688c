"""TD3 (Fujimoto, van Hoof & Meger 2018, "Addressing Function Approximation Error in Actor-Critic
Methods", Algorithm 1) on the engine: `--algo=TD3`, continuous Box actions, replay feed.

One update on a minibatch of B transitions (actions in [-1, 1]^D, `surge.learning.qpg_common`):

    ã = clip(μ'(s') + clip(σ̃·ξ, −c, c), −1, 1)                  target policy smoothing (eqs. 14-15)
    y = r + d·min(Q'1(s', ã), Q'2(s', ã))                        clipped double Q (eq. 10)
    L_Q = mean (Q1(s, a) − y)² + mean (Q2(s, a) − y)²             both critics (Stable-Baselines3's sum)
    every `policy_delay`-th update: L_μ = −mean Q1(s, μ(s)) (eq. 6 of Silver et al. 2014), then
    θ' ← τθ + (1 − τ)θ' for both critics' and the actor's targets (Algorithm 1's last lines)

d is γ (0 after a termination; a truncated step bootstraps). The update count starts at 1, so the
first actor step is the `policy_delay`-th update, as Stable-Baselines3 counts. DDPG
(`surge.algorithms.ddpg_td3.ddpg`) is this learner with one critic, `policy_delay=1` and no smoothing.
"""

from __future__ import annotations

from surge.algorithms.ddpg_td3.learner import td3_learner
from surge.algorithms.ddpg_td3.model import td3_parts
from surge.algorithms.ddpg_td3.params import TD3Params
from surge.learning.qpg_common import (
    QPG_DEFAULTS,
    qpg_algorithm,
)

TD3_DEFAULTS = {**QPG_DEFAULTS, "learning_rate": 1e-3}

TD3 = qpg_algorithm(
    "TD3",
    "twin delayed DDPG (Fujimoto et al. 2018): clipped double Q, target smoothing, delayed actor",
    td3_learner,
    td3_parts,
    TD3Params,
    TD3_DEFAULTS,
)
