"""Shared helpers of the rl_games YAML tests: the shipped files, and the flags issue 21's other
parts add (agreed names), to check the mapping of keys whose flags are not merged yet."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from surge.cfg.cli import read_yaml
from surge.cfg.config import param
from surge.cfg.rl_games_yaml import Translation, surge_fields, translate

rl_games = pytest.importorskip("rl_games")
CONFIGS = Path(rl_games.__file__).parent / "configs"


@dataclass
class _AgreedFlags:
    """The flags the other helpers of issue 21 add, with the agreed names and choices."""

    lr_schedule: str = param(
        "constant", "", ("constant", "linear_decay", "kl_adaptive_minibatch", "kl_adaptive_epoch")
    )
    lr_schedule_kl_threshold: float = param(0.008, "")
    bounds_loss_coef: float = param(0.0, "")
    bound_loss_type: str = param("bound", "", ("bound", "regularisation"))
    value_bootstrap: bool = param(True, "")
    reward_shift: float = param(0.0, "")
    score_to_win: float | None = param(None, "")
    zero_rnn_on_done: bool = param(True, "")
    clip_actions: bool = param(True, "")
    rescale_actions: bool = param(False, "")
    nonlinearity: str = param("elu", "", ("elu", "relu", "tanh", "silu", "gelu", "selu", "softplus", "none"))
    policy_initialization: str = param(
        "orthogonal",
        "",
        (
            "orthogonal",
            "xavier_uniform",
            "xavier_normal",
            "kaiming_normal",
            "variance_scaling",
            "uniform",
            "torch_default",
        ),
    )
    d2rl: bool = param(False, "")
    mu_activation: str = param("none", "", ("none", "tanh"))
    rnn_before_mlp: bool = param(False, "")
    rnn_layer_norm: bool = param(False, "")
    value_size: int = param(1, "")
    central_value: bool = param(False, "")
    central_value_mlp_layers: list = param([], "")
    central_value_learning_rate: float | None = param(None, "")
    central_value_mini_epochs: int | None = param(None, "")
    central_value_minibatch_size: int | None = param(None, "")
    central_value_normalize_input: bool = param(False, "")
    central_value_clip_value: bool = param(True, "")
    central_value_max_grad_norm: float | None = param(None, "")
    central_value_use_rnn: bool = param(False, "")


def future_fields(evaluation: bool = False) -> dict[str, dataclasses.Field]:
    """This build's flags plus the agreed ones of issue 21 (theirs win: wider choices)."""
    out = surge_fields(evaluation)
    out.update({f.name: f for f in dataclasses.fields(_AgreedFlags)})
    return out


def load(name: str) -> Any:
    return read_yaml(str(CONFIGS / name))


def translate_future(name: str, evaluation: bool = False) -> Translation:
    """The translation of a shipped file as it will be once issue 21's flags are merged."""
    return translate(load(name), name, evaluation, fields=future_fields(evaluation), separate_ok=True)
