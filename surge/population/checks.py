"""The population's checks of its flags (policy roles, self-play, per-policy hyper-parameters,
PBT), run by the preflight (`surge.app.preflight.validate_cfg`), and the note on a PBT budget too
short to act (`pbt_budget_notes`)."""

from __future__ import annotations

from surge.cfg.config import Config
from surge.cfg.policy_hyperparams import parse_policy_hyperparams
from surge.cfg.policy_roles import learning_policies, parse_frozen_policies
from surge.errors import ConfigError
from surge.learning.algorithm import get_algorithm


def check_roles(cfg: Config) -> None:
    """Refuses `--frozen_policies` and `--self_play` settings that cannot run: see
    `surge.cfg.policy_roles.parse_frozen_policies`; self-play needs at least one opponent slot
    (`--num_policies` >= 2), no `--frozen_policies` of its own (its slots are the frozen ones), the
    `self_play` mapping (the default `random` is replaced by it), a positive games_to_check,
    env_update_num in [1, num_policies-1], and an algorithm that learns.

    Raises:
        ConfigError: naming the field and the fix.
    """
    parse_frozen_policies(list(cfg.frozen_policies or []), cfg.num_policies)
    if not cfg.self_play:
        if cfg.policy_mapping == "self_play":
            raise ConfigError(
                "policy_mapping",
                "the self_play mapping pairs policy 0 with the pool's slots.",
                "pass --self_play=True, or another mapping.",
            )
        return
    if cfg.num_policies < 2:
        raise ConfigError(
            "num_policies",
            f"self-play needs opponent slots: policy 0 learns, 1..num_policies-1 hold snapshots; got "
            f"--num_policies={cfg.num_policies}.",
            "pass --num_policies=2 or more (e.g. 5 for a pool of 4 snapshots).",
        )
    if cfg.frozen_policies:
        raise ConfigError(
            "frozen_policies",
            "with --self_play=True policies 1..num_policies-1 are the pool's frozen slots.",
            "drop --frozen_policies, or --self_play.",
        )
    if cfg.policy_mapping not in ("random", "self_play"):
        raise ConfigError(
            "policy_mapping",
            f"self-play pairs policy 0 with an opponent slot in every game; --policy_mapping="
            f"{cfg.policy_mapping} would not.",
            "leave --policy_mapping unset (or pass self_play).",
        )
    if cfg.self_play_games_to_check < 1:
        raise ConfigError("self_play_games_to_check", "must be >= 1.", "e.g. 200.")
    if not 1 <= cfg.self_play_env_update_num <= cfg.num_policies - 1:
        raise ConfigError(
            "self_play_env_update_num",
            f"must be between 1 and the {cfg.num_policies - 1} opponent slot(s), got "
            f"{cfg.self_play_env_update_num}.",
            "e.g. --self_play_env_update_num=1.",
        )
    if cfg.with_pbt:
        raise ConfigError("self_play", "self-play and PBT do not run together yet.", "pass one of them.")
    if not get_algorithm(cfg.algo).trains or cfg.sampler_only:
        raise ConfigError("self_play", f"--algo={cfg.algo} does not learn: no snapshots to play.", "")


def check_population(cfg: Config) -> None:
    """Per-policy hyper-parameters and PBT's flags (docs/population.md).

    Raises:
        ConfigError: a malformed `--policy_hyperparams`, a PBT flag out of range, or
            `--pbt_optimize_batch_size=True`.
    """
    per_policy = parse_policy_hyperparams(cfg.policy_hyperparams, cfg.num_policies)
    learning = learning_policies(cfg)
    if frozen := sorted(p for p in per_policy if p not in learning):
        raise ConfigError(
            "policy_hyperparams",
            f"policies {frozen} are frozen (--frozen_policies / --self_play): they have no learner to use hyper-parameters.",
            "give hyper-parameters to learning policies only.",
        )
    if cfg.pbt_optimize_batch_size:
        raise ConfigError(
            "pbt_optimize_batch_size",
            "PBT cannot change the batch size: it sizes the shared trajectory buffers and the block "
            "pool, allocated once before the processes start (Sample Factory 2 disables it for the same reason).",
            "use --pbt_optimize_batch_size=False.",
        )
    if not cfg.with_pbt:
        return
    if cfg.num_policies < 2:
        raise ConfigError(
            "with_pbt", "PBT needs a population: --num_policies is 1.", "pass --num_policies=2 or more."
        )
    if not get_algorithm(cfg.algo).trains or cfg.sampler_only:
        raise ConfigError(
            "with_pbt", f"--algo={cfg.algo} does not train: there is nothing for PBT to select.", ""
        )
    if len(learning) < cfg.num_policies:
        raise ConfigError(
            "with_pbt",
            f"PBT ranks and replaces every policy, but policies {sorted(set(range(cfg.num_policies)) - set(learning))} "
            "are frozen (--frozen_policies): they have no learner to copy into or from.",
            "drop --frozen_policies, or use --with_pbt=False.",
        )
    if not 0.0 < cfg.pbt_replace_fraction <= 0.5:
        raise ConfigError(
            "pbt_replace_fraction",
            f"must be in (0, 0.5], got {cfg.pbt_replace_fraction}: the best and the worst fractions must not overlap.",
            "",
        )
    if not 0.0 <= cfg.pbt_mutation_rate <= 1.0:
        raise ConfigError("pbt_mutation_rate", f"is a probability, got {cfg.pbt_mutation_rate}.", "")
    if not 1.0 <= cfg.pbt_perturb_min <= cfg.pbt_perturb_max:
        raise ConfigError(
            "pbt_perturb_min",
            f"need 1 <= --pbt_perturb_min <= --pbt_perturb_max, got {cfg.pbt_perturb_min} and {cfg.pbt_perturb_max}.",
            "",
        )
    for name in (
        "pbt_period_env_steps",
        "pbt_start_mutation",
        "pbt_replace_reward_gap",
        "pbt_replace_reward_gap_absolute",
    ):
        if getattr(cfg, name) < 0:
            raise ConfigError(name, f"must be >= 0, got {getattr(cfg, name)}.", "")
    if not cfg.pbt_target_objective:
        raise ConfigError(
            "pbt_target_objective", "is empty.", "pass true_reward or a statistic the env reports in info."
        )


def pbt_budget_notes(cfg: Config) -> list[str]:
    """With --with_pbt=True, a sentence when the run's budget is too short for PBT to update any
    policy: a policy is first updated once it played more than --pbt_period_env_steps and at
    least --pbt_start_mutation env frames (`surge.population.pbt`), and the policies share
    --train_for_env_steps, about train_for_env_steps / num_policies env frames each. Sample
    Factory's defaults (5M and 20M env frames) leave a short run without a single update."""
    if not cfg.with_pbt:
        return []
    first = max(cfg.pbt_start_mutation, cfg.pbt_period_env_steps + 1)
    share = cfg.train_for_env_steps // max(1, cfg.num_policies)
    if first <= share:
        return []
    return [
        f"--with_pbt=True will likely update no policy in this run: a policy is first updated after it "
        f"played {first} env frames (--pbt_start_mutation={cfg.pbt_start_mutation}, "
        f"--pbt_period_env_steps={cfg.pbt_period_env_steps}), and each of the {cfg.num_policies} "
        f"policies plays about {share} of --train_for_env_steps={cfg.train_for_env_steps}; lower both "
        "flags for PBT to act."
    ]
