"""The sampling subsystem's checks of its flags (`--policy_mapping`, `--num_policies` against the
agents and envs that act), run by the preflight (`surge.app.preflight.validate_cfg`)."""

from __future__ import annotations

from surge.cfg.config import Config
from surge.envs.registry import make_env
from surge.errors import ConfigError
from surge.sampling.policy_mapping import mapping_names


def check_mapping_name(cfg: Config) -> None:
    """`--policy_mapping` names a built-in or registered mapping; else every rollout worker would
    fail to start.

    Raises:
        ConfigError: on --policy_mapping, listing the known names.
    """
    if cfg.policy_mapping not in mapping_names():
        raise ConfigError(
            "policy_mapping",
            f"unknown policy mapping {cfg.policy_mapping!r}.",
            f"use one of {mapping_names()}, or a name registered with "
            "surge.sampling.policy_mapping.register_policy_mapping before the run starts.",
        )


def check_policy_mapping(cfg: Config, num_agents: int | None = None) -> None:
    """Refuses policies that the built-in mappings can never pick, whose learners would idle for
    the whole run and whose checkpoints would stay untrained: with `agent_index`, policies
    `num_agents`..`num_policies-1` (agent i acts as policy i mod num_policies); with `env_index`,
    policies beyond the run's env objects (num_workers x num_envs_per_worker). `random` picks every
    policy; a registered mapping is the user's to check.

    Args:
        num_agents: agents of one env object; None makes the env once to count them (only for
            agent_index with several policies); an env that cannot be made here is not checked
            (the run's start reports why, and `surge.runtime.components.env_info` checks again
            with the agents it counts).
    Raises:
        ConfigError: on --num_policies, naming the idle policies and the alternatives; on
            --self_play for an env of one agent (self-play needs two players).
    """
    n = cfg.num_policies
    if getattr(cfg, "self_play", False) and num_agents is None:
        num_agents = _count_agents(cfg)
    if getattr(cfg, "self_play", False) and num_agents is not None and num_agents < 2:
        raise ConfigError(
            "self_play",
            f"{cfg.env} has {num_agents} agent: self-play needs a game of two players.",
            "use a two-player env (e.g. --env=pettingzoo_classic.connect_four_v3), or --self_play=False.",
        )
    if n <= 1 or cfg.policy_mapping not in ("agent_index", "env_index"):
        return
    if cfg.policy_mapping == "env_index":
        acting = cfg.num_workers * cfg.num_envs_per_worker
        what = (
            f"env k acts as policy k mod {n}, and the run has {acting} env(s) "
            f"(--num_workers={cfg.num_workers} x --num_envs_per_worker={cfg.num_envs_per_worker})"
        )
        fix = (
            f"pass --num_policies={acting} or fewer, or more envs (--num_workers x "
            f"--num_envs_per_worker >= {n}), or --policy_mapping=random."
        )
    else:
        if num_agents is None:
            num_agents = _count_agents(cfg)
            if num_agents is None:
                return
        acting = num_agents
        what = f"agent i of an env acts as policy i mod {n}, and {cfg.env!r} has {acting} agent(s) per env"
        fix = (
            f"pass --num_policies={acting}" + (" or fewer" if acting > 1 else "") + " (one policy "
            "per agent), or --policy_mapping=random or env_index to give all agents of an env to one "
            "policy."
        )
    if acting >= n:
        return
    idle = list(range(acting, n))
    shown = (
        f"policies {', '.join(map(str, idle[:-1]))} and {idle[-1]}" if len(idle) > 1 else f"policy {idle[0]}"
    )
    raise ConfigError(
        "num_policies",
        f"{shown} would never act with --policy_mapping={cfg.policy_mapping}: {what}; "
        f"{'their learners' if len(idle) > 1 else 'its learner'} would idle for the whole run.",
        fix,
    )


def _count_agents(cfg: Config) -> int | None:
    """Agents of one env object of `cfg` (makes the env once, then closes it); None when the env
    cannot be made here."""
    try:
        env = make_env(cfg)
    except Exception:  # noqa: BLE001 - the env's own error comes at the run's start, from env_info
        return None
    try:
        return int(env.num_agents)
    finally:
        env.close()
