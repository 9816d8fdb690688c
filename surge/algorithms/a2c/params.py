"""A2C's config section: its own flags (`--help` section "A2C"), read with `surge.cfg.config.algo_params`."""

from __future__ import annotations

from dataclasses import dataclass

from surge.cfg.config import param


@dataclass
class A2CParams:
    """A2C's own flags. (`--help` section "A2C")"""

    popart: bool = param(
        True,
        "With --normalize_returns: rescale the value head whenever the returns statistics move, so "
        "that the critic's values in return units do not jump with them (PopArt, van Hasselt et al. "
        "2016, eq. 6-7; docs/logs/a2c_stability_2026-11-25.md). No effect without "
        "--normalize_returns (reported in the log).",
    )

    def validate(self) -> None:
        """Nothing to range-check (a switch)."""
