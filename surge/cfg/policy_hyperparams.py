"""Each policy's own hyper-parameters (`PolicyHyperparams`), owned by its learner.

A learner reads these from `learner.hp`, never from the shared `Config`: in the serial placement
all learners share one `Config` object, and PBT changes one policy's values while the run goes on
(`surge.runtime.commands.SetHyperparams`). They start from the run's flags (and
`--policy_hyperparams` per policy), are saved in the policy's checkpoint (`LearnerBase.state_dict`)
and restored on resume, and are logged per policy on TensorBoard under `hyperparams/<name>`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any

from surge.cfg.config import Config, flag_value
from surge.errors import ConfigError

#: the names, in the order TensorBoard and the log list them (Sample Factory's names)
HYPERPARAM_NAMES: tuple[str, ...] = (
    "learning_rate",
    "exploration_loss_coeff",
    "value_loss_coeff",
    "ppo_clip_ratio",
    "ppo_clip_value",
    "gamma",
    "gae_lambda",
    "max_grad_norm",
    "adam_beta1",
    "adam_beta2",
)

#: PPO's clips: Sample Factory's defaults (2.1.1's `sample_factory/cfg/cfg.py`), the flags' defaults
#: in APPO's section (`surge.algorithms.appo.config.APPOParams`, which reads them from here)
PPO_CLIP_RATIO_DEFAULT = 0.1
PPO_CLIP_VALUE_DEFAULT = 1.0

#: the values of the names an algorithm's config has no flag for (PPO's clips are APPO's section):
#: the flags' defaults, kept so that every learner's hyper-parameters (checkpoints, TensorBoard's
#: hyperparams/) have the same names
_ABSENT_DEFAULTS = {"ppo_clip_ratio": PPO_CLIP_RATIO_DEFAULT, "ppo_clip_value": PPO_CLIP_VALUE_DEFAULT}

#: per name: (lowest, highest, whether the lowest itself is allowed); used by `check_values`
_RANGES: dict[str, tuple[float, float, bool]] = {
    "learning_rate": (0.0, math.inf, True),
    "exploration_loss_coeff": (0.0, math.inf, True),
    "value_loss_coeff": (0.0, math.inf, True),
    "ppo_clip_ratio": (0.0, math.inf, False),
    "ppo_clip_value": (0.0, math.inf, False),
    "gamma": (0.0, 1.0, True),
    "gae_lambda": (0.0, 1.0, True),
    "max_grad_norm": (0.0, math.inf, True),  # 0: no clipping
    "adam_beta1": (0.0, 1.0, True),
    "adam_beta2": (0.0, 1.0, True),
}


@dataclass
class PolicyHyperparams:
    """One policy's hyper-parameters (meanings as the flags of the same names, `surge train --help`).

    learning_rate: Adam's step size before the `--lr_schedule` factor; exploration_loss_coeff,
    value_loss_coeff: the loss terms' weights; ppo_clip_ratio, ppo_clip_value: PPO's clipping
    (APPO only); gamma: discount per env step; gae_lambda: GAE's lambda (Schulman et al. 2016);
    max_grad_norm: global L2 gradient-norm clip (0: none); adam_beta1/2: Adam's moment decays
    (Kingma & Ba 2015)."""

    learning_rate: float
    exploration_loss_coeff: float
    value_loss_coeff: float
    ppo_clip_ratio: float
    ppo_clip_value: float
    gamma: float
    gae_lambda: float
    max_grad_norm: float
    adam_beta1: float
    adam_beta2: float

    @classmethod
    def from_cfg(cls, cfg: Config, policy_id: int = 0) -> PolicyHyperparams:
        """The run's flags, overridden by `--policy_hyperparams`' entry for `policy_id` (if any).

        Raises:
            ConfigError: `--policy_hyperparams` is malformed (`parse_policy_hyperparams`).
        """
        hp = cls(
            **{name: float(flag_value(cfg, name, _ABSENT_DEFAULTS.get(name))) for name in HYPERPARAM_NAMES}
        )
        overrides = parse_policy_hyperparams(getattr(cfg, "policy_hyperparams", ""), cfg.num_policies)
        hp.update(overrides.get(policy_id, {}))
        return hp

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)

    def update(self, values: dict[str, Any]) -> dict[str, tuple[float, float]]:
        """Sets the given values; returns `{name: (old, new)}` of those that changed.

        Raises:
            ValueError: an unknown name or a value out of its range (nothing is changed then).
        """
        clean = check_values(values)
        changed = {}
        for name, value in clean.items():
            old = getattr(self, name)
            if old != value:
                changed[name] = (old, value)
                setattr(self, name, value)
        return changed

    def stats(self) -> dict[str, float]:
        """The values as learner statistics (`hp_<name>`, logged as `hyperparams/<name>`)."""
        return {f"hp_{k}": float(v) for k, v in self.to_dict().items()}


def check_values(values: dict[str, Any]) -> dict[str, float]:
    """`values` as floats after checking names and ranges.

    Raises:
        ValueError: an unknown name (the message lists the known ones) or a value out of range.
    """
    out = {}
    for name, value in values.items():
        if name not in _RANGES:
            raise ValueError(
                f"unknown hyper-parameter {name!r}; per-policy ones are: {', '.join(HYPERPARAM_NAMES)}"
            )
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"hyper-parameter {name} must be a number, got {value!r}") from None
        lo, hi, lo_ok = _RANGES[name]
        if not math.isfinite(v) or v > hi or v < lo or (v == lo and not lo_ok):
            raise ValueError(
                f"hyper-parameter {name}={v!r} is out of range ({'[' if lo_ok else '('}{lo}, {hi}])"
            )
        out[name] = v
    return out


def parse_policy_hyperparams(text: str, num_policies: int) -> dict[int, dict[str, float]]:
    """`--policy_hyperparams`: a JSON object `{"<policy id>": {"<name>": value, ...}, ...}` (for
    example `{"1": {"learning_rate": 3e-3}}`); "" means none.

    Raises:
        ConfigError: not such an object, a policy id outside `[0, num_policies)`, or a bad name or value.
    """
    if not text:
        return {}
    field = "policy_hyperparams"
    example = 'e.g. --policy_hyperparams=\'{"1": {"learning_rate": 3e-3}}\''
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(field, f"is not valid JSON ({e}).", example) from None
    if not isinstance(raw, dict):
        raise ConfigError(field, "must be a JSON object of policy id -> {name: value}.", example)
    out: dict[int, dict[str, float]] = {}
    for key, values in raw.items():
        try:
            p = int(key)
        except ValueError:
            raise ConfigError(field, f"key {key!r} is not a policy id.", example) from None
        if not 0 <= p < num_policies:
            raise ConfigError(field, f"policy {p} does not exist (--num_policies={num_policies}).", example)
        if not isinstance(values, dict):
            raise ConfigError(field, f"policy {p}'s entry must be an object of name -> value.", example)
        try:
            out[p] = check_values(values)
        except ValueError as e:
            raise ConfigError(field, f"policy {p}: {e}.", example) from None
    return out
