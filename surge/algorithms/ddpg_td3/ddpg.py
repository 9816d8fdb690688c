"""DDPG (Lillicrap et al. 2016, "Continuous control with deep reinforcement learning", Algorithm 1)
on the engine: `--algo=DDPG`, continuous Box actions, replay feed.

One update on a minibatch (actions in [-1, 1]^D, `surge.learning.qpg_common`):

    y = r + d·Q'(s', μ'(s'))                   (Algorithm 1's y_i; d = γ, 0 after a termination)
    L_Q = mean (Q(s, a) − y)²
    L_μ = −mean Q(s, μ(s))                     (deterministic policy gradient, Silver et al. 2014, eq. 6)
    θ' ← τθ + (1 − τ)θ' for the critic's and the actor's targets

as Stable-Baselines3's DDPG (its TD3 with one critic, `policy_delay=1` and no target smoothing):
`surge.algorithms.ddpg_td3.learner.TD3Learner` with TD3's options off (`DDPGParams.td3_options`). The critic takes the action at its input
(TD3's "our DDPG" variant and Stable-Baselines3's), not at its second layer as the paper.
"""

from __future__ import annotations

from surge.algorithms.ddpg_td3.learner import ddpg_learner
from surge.algorithms.ddpg_td3.model import ddpg_parts
from surge.algorithms.ddpg_td3.params import DDPGParams
from surge.algorithms.ddpg_td3.td3 import TD3_DEFAULTS
from surge.learning.qpg_common import qpg_algorithm

DDPG = qpg_algorithm(
    "DDPG",
    "deep deterministic policy gradient (Lillicrap et al. 2016), one critic",
    ddpg_learner,
    ddpg_parts,
    DDPGParams,
    TD3_DEFAULTS,
)
