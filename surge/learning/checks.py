"""The learning subsystem's checks of its flags, run by the preflight
(`surge.app.preflight.validate_cfg`): the algorithm's (its declaration's `validate` and its
section's ranges), rl_games' options, the central value, mixed precision, and `--device`."""

from __future__ import annotations

import dataclasses
import re

import torch

from surge.cfg.config import Config, algo_params
from surge.cfg.fields import check_ranges
from surge.errors import ConfigError
from surge.learning.algorithm import get_algorithm
from surge.learning.algorithm_registry import algorithm_names
from surge.learning.amp import check_mixed_precision
from surge.learning.central_value import check_central_value_flags
from surge.learning.pg_checks import check_rl_games_options


def check_algorithm_flags(cfg: Config) -> None:
    """rl_games' policy-gradient options (`check_rl_games_options`), the ranges declared on the
    fields of the algorithm's section (`Algorithm.params`, generated as for the core sections:
    `surge.cfg.fields.check_ranges`), the algorithm's own checks (`Algorithm.validate`: APPO's PPO
    and V-trace ranges, `surge.learning.pg_checks`), the central value's, mixed precision's and the
    section's own `validate()` (`cfg.algo_params.validate()`), in that order.

    Raises:
        ConfigError: naming the first field out of range and how to fix it.
    """
    check_rl_games_options(cfg)
    algo = get_algorithm(cfg.algo)
    if algo.params is not None:  # the ranges its section's fields declare (`param(..., low=)`)
        fields = dataclasses.fields(algo.params)
        section: object = algo_params(cfg, algo.params)
        check_ranges(section, fields, count=True)
        check_ranges(section, fields, count=False)
    algo.validate(cfg)
    check_prev_action_reward(cfg)
    check_central_value_flags(cfg)
    check_mixed_precision(cfg)
    check_algo = getattr(cfg.algo_params, "validate", None)
    if callable(check_algo):  # the algorithm's section's own ranges (`Algorithm.params`)
        check_algo()


def check_prev_action_reward(cfg: Config) -> None:
    """`--use_prev_action_reward` with an algorithm whose model reads the two inputs
    (`Capabilities.prev_action_reward`).

    Raises:
        ConfigError: another algorithm, naming those that take the flag.
    """
    if not cfg.use_prev_action_reward or get_algorithm(cfg.algo).capabilities.prev_action_reward:
        return
    able = [name for name in algorithm_names() if get_algorithm(name).capabilities.prev_action_reward]
    raise ConfigError(
        "use_prev_action_reward",
        f"--algo={cfg.algo}'s model does not read the previous action and reward; {', '.join(able)} do.",
        f"pass --use_prev_action_reward=False, or --algo={able[0] if able else 'APPO'}.",
    )


def check_device(device: str) -> None:
    """`--device`: cpu, gpu, cuda or cuda:K with a GPU K this process sees.

    Raises:
        ConfigError: another spelling, no CUDA device, or no GPU K.
    """
    m = re.fullmatch(r"cuda:(\d+)", device)
    if device not in ("cpu", "gpu", "cuda") and m is None:
        raise ConfigError("device", f"{device!r} is not a device.", "pass --device=cpu, gpu, cuda or cuda:K.")
    if device == "cpu":
        return
    if not torch.cuda.is_available():
        raise ConfigError("device", "no CUDA device is available to this process.", "pass --device=cpu.")
    if m is not None and int(m[1]) >= torch.cuda.device_count():
        raise ConfigError(
            "device",
            f"GPU {m[1]} does not exist: this process sees {torch.cuda.device_count()} GPU(s).",
            f"pass --device=cuda:K with K < {torch.cuda.device_count()}, or --device=gpu.",
        )
