"""SAC's config section: its own flags (`--help` section "SAC"), read with `surge.cfg.config.algo_params`."""

from __future__ import annotations

import math
from dataclasses import dataclass

from surge.cfg.config import param
from surge.errors import ConfigError
from surge.learning.qpg_common import (
    QPGParams,
)


def parse_ent_coef(value: str) -> tuple[bool, float]:
    """`auto` -> (learned, 1.0), `auto_0.1` -> (learned, 0.1), `0.2` -> (fixed, 0.2).

    Raises:
        ConfigError: anything else, or a value <= 0 or non-finite.
    """
    learned, text = value.startswith("auto"), value
    if learned:
        text = value[5:] if value.startswith("auto_") else ("1.0" if value == "auto" else "")
    try:
        alpha = float(text)
    except ValueError:
        alpha = math.nan
    if not (math.isfinite(alpha) and alpha > 0):
        raise ConfigError(
            "ent_coef", f"must be auto, auto_<init> or a float > 0, got {value!r}.", "e.g. --ent_coef=auto."
        )
    return learned, alpha


@dataclass
class SACParams(QPGParams):
    """SAC's own flags (Stable-Baselines3's names and defaults)."""

    ent_coef: str = param(
        "auto",
        "Entropy temperature α: auto (learned, from 1), auto_<init> (learned, from init) or a fixed float.",
    )
    target_entropy: str = param("auto", "Target entropy H̄ of the learned α: auto (−dim(A)) or a float.")

    def validate(self) -> None:
        super().validate()
        parse_ent_coef(self.ent_coef)
        if self.target_entropy != "auto":
            try:
                ok = math.isfinite(float(self.target_entropy))
            except ValueError:
                ok = False
            if not ok:
                raise ConfigError(
                    "target_entropy",
                    f"must be auto or a float, got {self.target_entropy!r}.",
                    "e.g. --target_entropy=auto.",
                )
