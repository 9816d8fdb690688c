"""Validation of the "distributed" flags (`--distributed=ray`), before any process starts."""

from __future__ import annotations

import importlib.util
from typing import Any

from surge.cfg.config import Config, minibatches_to_accumulate
from surge.errors import ConfigError
from surge.learning.algorithm import Feed, get_algorithm

#: the flags only `--distributed=ray` reads
RAY_ONLY = (
    "ray_address",
    "ray_sampler_nodes",
    "ray_node_resource",
    "ray_max_restarts",
    "ray_blocks_per_shipment",
)


def ray_notes(cfg: Config, defaults: dict[str, Any]) -> list[str]:
    """The run log's notes (`surge.app.notes.config_notes`): each `ray_*` flag set away from its
    default in a run without `--distributed=ray`, where it has no effect."""
    if getattr(cfg, "distributed", "none") == "ray":
        return []
    return [
        f"--{name} has no effect without --distributed=ray."
        for name in RAY_ONLY
        if name in defaults and getattr(cfg, name) != defaults[name]
    ]


def check_ray_flags(cfg: Config) -> None:
    """Refuses `--distributed=ray` settings this path cannot run, and the `ray_*` flags out of range.

    Raises:
        ConfigError: naming the field: Ray not installed; `serial_mode`, `sampler_only`, several
            policies (PBT, self-play, frozen policies), A2C or synchronous PPO with Ray; a
            `ray_sampler_nodes` or `ray_blocks_per_shipment` below 1, a `ray_max_restarts` below -1.
    """
    if cfg.distributed not in ("none", "ray"):
        raise ConfigError(
            "distributed", f"unknown value {cfg.distributed!r}.", "pass --distributed=none or ray."
        )
    for name in ("ray_sampler_nodes", "ray_blocks_per_shipment"):
        v = getattr(cfg, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(
                name, f"must be a positive integer, got {v!r}.", f"pass --{name}=N with N >= 1."
            )
    if not isinstance(cfg.ray_max_restarts, int) or cfg.ray_max_restarts < -1:
        raise ConfigError(
            "ray_max_restarts", f"must be -1 (no limit) or >= 0, got {cfg.ray_max_restarts!r}.", ""
        )
    if cfg.distributed != "ray":
        return
    if importlib.util.find_spec("ray") is None:
        raise ConfigError(
            "distributed",
            "Ray is not installed.",
            "pip install 'surge-rl[ray]' (ray[default]), or --distributed=none.",
        )
    algo = get_algorithm(cfg.algo)
    refused = [
        ("serial_mode", bool(cfg.serial_mode), "pass --serial_mode=False (sampler nodes are processes)"),
        ("sampler_only", bool(cfg.sampler_only), "pass --sampler_only=False"),
        ("num_policies", cfg.num_policies > 1, "pass --num_policies=1"),
        ("with_pbt", bool(cfg.with_pbt), "pass --with_pbt=False"),
        ("self_play", bool(cfg.self_play), "pass --self_play=False"),
        ("algo", not algo.trains, "use a training algorithm such as APPO"),
        # synchronous learning (A2C, --num_minibatches_to_accumulate=0: policy lag 0) holds every
        # block until it is trained; a sampler node frees a block as soon as it is shipped and
        # keeps sampling with the weights it has, so learning would silently become asynchronous
        ("algo", algo.capabilities.synchronous, f"use APPO ({cfg.algo} learns synchronously: policy lag 0)"),
        (
            "num_minibatches_to_accumulate",
            # (replay learners copy each block into their replay and release it at once)
            not algo.capabilities.synchronous
            and algo.feed is not Feed.REPLAY
            and minibatches_to_accumulate(cfg) == 0,
            "pass --num_minibatches_to_accumulate=-1 (or >= 1) for asynchronous PPO; synchronous PPO "
            "(0: policy lag 0) cannot be kept by sampler nodes that sample while their blocks travel",
        ),
    ]
    for name, bad, fix in refused:
        if bad:
            raise ConfigError(
                name,
                f"--{name}={getattr(cfg, name)} is not supported with --distributed=ray (one learning "
                "policy trained on the head from the sampler nodes' blocks, docs/scaling.md).",
                f"{fix}, or --distributed=none.",
            )
