"""TD3 and DDPG's config section: its own flags (`--help` section "TD3 and DDPG"), read with `surge.cfg.config.algo_params`."""

from __future__ import annotations

from dataclasses import dataclass

from surge.cfg.config import param
from surge.errors import ConfigError
from surge.learning.qpg_common import (
    QPGParams,
)


@dataclass
class DeterministicPGParams(QPGParams):
    """Flags of the deterministic-actor algorithms (TD3, DDPG)."""

    action_noise: str = param(
        "normal",
        "Exploration noise added to the actor's action: normal (Gaussian) or none.",
        ("normal", "none"),
    )
    action_noise_std: float = param(0.1, "Std of the Gaussian exploration noise, in [-1, 1] action units.")

    def validate(self) -> None:
        super().validate()
        if self.action_noise_std < 0:
            raise ConfigError(
                "action_noise_std",
                f"must be >= 0, got {self.action_noise_std}.",
                "e.g. --action_noise_std=0.1.",
            )

    @property
    def exploration_std(self) -> float:
        return self.action_noise_std if self.action_noise == "normal" else 0.0

    def td3_options(self) -> tuple[bool, int, float, float]:
        """(target policy smoothing, policy_delay, target_policy_noise, target_noise_clip): TD3's
        options, all off here (DDPG: no smoothing, the actor and targets updated at every step);
        `TD3Params` turns them on."""
        return False, 1, 0.0, 0.0


@dataclass
class TD3Params(DeterministicPGParams):
    """TD3's own flags (Stable-Baselines3's names and defaults, the paper's values)."""

    policy_delay: int = param(2, "Critic updates per actor and target update (d of Fujimoto et al. 2018).")
    target_policy_noise: float = param(0.2, "Std σ̃ of the target policy smoothing noise, in action units.")
    target_noise_clip: float = param(0.5, "Clip c of the target policy smoothing noise.")

    def validate(self) -> None:
        super().validate()
        if self.policy_delay < 1:
            raise ConfigError(
                "policy_delay", f"must be >= 1, got {self.policy_delay}.", "e.g. --policy_delay=2."
            )
        for name in ("target_policy_noise", "target_noise_clip"):
            if getattr(self, name) < 0:
                raise ConfigError(name, f"must be >= 0, got {getattr(self, name)}.", "")

    def td3_options(self) -> tuple[bool, int, float, float]:
        return True, self.policy_delay, self.target_policy_noise, self.target_noise_clip


@dataclass
class DDPGParams(DeterministicPGParams):
    """DDPG's own flags (its section; the shared ones of `DeterministicPGParams`)."""
