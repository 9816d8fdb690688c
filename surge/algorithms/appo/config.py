"""APPO's config section (`--help` section "algorithm APPO"): the PPO and V-trace flags only APPO's
learner reads, `cfg.algo_params` of an APPO run, read typed with
`surge.cfg.config.algo_params(cfg, APPOParams)`.

Names, meanings and defaults are Sample Factory's (2.1.1's `sample_factory/cfg/cfg.py`, the same in
v1's `appo.py`), except `with_vtrace`, True as in Sample Factory v1 (the seed's default; 2.1.1 has
False). The command line, YAML files and cfg.json keep them flat (`--ppo_clip_ratio=0.2`), as
Sample Factory writes them; a cfg.json saved before the section existed holds the same flat keys,
so it resumes unchanged. The flags APPO shares with A2C (`gae_lambda`, `value_loss_coeff`,
`exploration_loss`, `exploration_loss_coeff`, `normalize_advantage`, `normalize_returns`,
`value_bootstrap`) stay in the core optimiser section (`surge.cfg.config.OptimParams`).
"""

from __future__ import annotations

from dataclasses import dataclass

from surge.cfg.fields import param
from surge.cfg.policy_hyperparams import PPO_CLIP_RATIO_DEFAULT, PPO_CLIP_VALUE_DEFAULT


@dataclass
class APPOParams:
    """APPO's own flags. (`--help` section "algorithm APPO")

    The ranges declared with `low=` are checked by the preflight from these definitions
    (`surge.learning.checks.check_algorithm_flags`); the strict ones (> 0) by
    `surge.learning.pg_checks.check_ppo_flags`."""

    with_vtrace: bool = param(True, "V-trace off-policy correction (Espeholt et al. 2018); GAE if False.")
    vtrace_rho: float = param(
        1.0, "rho-bar (> 0): truncation of the V-trace importance weights in the targets."
    )
    vtrace_c: float = param(
        1.0,
        "c-bar (>= 0): truncation of the V-trace trace-cutting coefficients.",
        low=0,
        why="below 0 the trace coefficients change sign; 0 gives one-step targets, IMPALA's default is 1",
    )
    ppo_clip_ratio: float = param(
        PPO_CLIP_RATIO_DEFAULT,
        "PPO clip epsilon; the ratio is clipped to [1/(1+e), 1+e] (see ppo_clip_lower).",
    )
    ppo_clip_lower: str = param(
        "inverse",
        "APPO: the lower end of the ratio clip. inverse: 1/(1+e) (Sample Factory 2); symmetric: 1-e "
        "(Schulman et al. 2017 eq. 7, rl_games, Stable-Baselines3).",
        ("inverse", "symmetric"),
    )
    ppo_clip_value: float = param(
        PPO_CLIP_VALUE_DEFAULT, "Max absolute change of the value estimate before it is clipped."
    )
    kl_loss_coeff: float = param(
        0.0,
        "Coefficient of the fixed KL(behavior || target) penalty (Schulman et al. 2017, eq. 8).",
        low=0,
        why="a negative coefficient rewards moving away from the behaviour policy",
    )
    bounds_loss_coef: float = param(
        0.0,
        "APPO, Gaussian actions: coefficient of rl_games' bounds loss on the action mean (0: off; "
        "see bound_loss_type). Refused for other action spaces.",
    )
    bound_loss_type: str = param(
        "bound",
        "bound: sum over action dims of max(mu - 1.1, 0)^2 + min(mu + 1.1, 0)^2; regularisation: sum "
        "of mu^2 (rl_games' a2c_continuous.py bound_loss / reg_loss), averaged over valid samples.",
        ("bound", "regularisation"),
    )
    normalize_advantage_over: str = param(
        "minibatch",
        "APPO with GAE: the samples the advantages are normalised over. minibatch: each minibatch's "
        "valid samples (Sample Factory 2); batch: the whole batch's, once before the first epoch "
        "(rl_games' prepare_dataset, Stable-Baselines3 normalises per minibatch). Refused with V-trace "
        "(its advantages are computed per minibatch).",
        ("minibatch", "batch"),
    )
    obs_normalizer_update: str = param(
        "batch",
        "APPO with normalize_input: when the learner folds observations into the running statistics. "
        "batch: once per batch, before its first minibatch (Sample Factory 2); minibatch: at each "
        "minibatch's forward pass in every epoch, so each sample counts ppo_epochs times (rl_games' "
        "RunningMeanStd in training mode).",
        ("batch", "minibatch"),
    )
