"""Which policies learn and which are frozen, read from the config alone: `--frozen_policies
ID:SOURCE` and `--self_play=True` (policies 1..num_policies-1 are the pool's opponent slots). The
placements ask `learning_policies(cfg)` which learners to build; the routing of experience asks it
which policies' steps go to a learner. Setting a frozen policy's weights from its source is the
population's (`surge.population.roles`).
"""

from __future__ import annotations

from pathlib import Path

from surge.cfg.config import Config
from surge.errors import ConfigError

#: the weight sources of `--frozen_policies` other than a checkpoint file
BUILT_IN_SOURCES = ("random", "uniform")


def parse_frozen_policies(items: list[str], num_policies: int) -> dict[int, str]:
    """`--frozen_policies` as {policy id: source}.

    Args:
        items: the flag's `ID:SOURCE` strings.
        num_policies: `--num_policies`.
    Raises:
        ConfigError: an item is not `ID:SOURCE`, an id is out of [0, num_policies) or repeated, a
            checkpoint file does not exist, or every policy would be frozen.
    """
    out: dict[int, str] = {}
    for item in items:
        head, sep, source = str(item).partition(":")
        if not sep or not head.strip().isdigit() or not source:
            raise ConfigError(
                "frozen_policies",
                f"{item!r} is not ID:SOURCE.",
                "write e.g. --frozen_policies 1:uniform 2:path/to/checkpoint.pth.",
            )
        p = int(head)
        if not 0 <= p < num_policies:
            raise ConfigError(
                "frozen_policies",
                f"policy {p} does not exist with --num_policies={num_policies}.",
                f"use ids between 0 and {num_policies - 1}, or raise --num_policies.",
            )
        if p in out:
            raise ConfigError("frozen_policies", f"policy {p} is listed twice.", "list each policy once.")
        if source not in BUILT_IN_SOURCES and not Path(source).is_file():
            raise ConfigError(
                "frozen_policies",
                f"policy {p}'s source {source!r} is neither {' nor '.join(BUILT_IN_SOURCES)} nor a file.",
                "give the path of a checkpoint (.pth) written by surge.",
            )
        out[p] = source
    if out and len(out) >= num_policies:
        raise ConfigError(
            "frozen_policies", "every policy is frozen: nothing would learn.", "leave one policy learning."
        )
    return out


def frozen_sources(cfg: Config) -> dict[int, str]:
    """{policy id: weight source} of the frozen policies; source `self_play` for the opponent slots
    of `--self_play=True` (their weights come from the pool)."""
    if getattr(cfg, "self_play", False):
        return {p: "self_play" for p in range(1, cfg.num_policies)}
    return parse_frozen_policies(list(getattr(cfg, "frozen_policies", []) or []), cfg.num_policies)


def learning_policies(cfg: Config) -> list[int]:
    """The ids of the policies that learn, ascending (all of them unless some are frozen)."""
    frozen = frozen_sources(cfg)
    return [p for p in range(cfg.num_policies) if p not in frozen]


def is_learning(cfg: Config, policy_id: int) -> bool:
    """True when policy `policy_id` learns (`learning_policies`)."""
    return policy_id in learning_policies(cfg)
