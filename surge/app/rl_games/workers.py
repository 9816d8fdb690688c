"""rl_games' `num_actors` envs laid out as surge's workers, envs per worker and splits (the file's
translation and `--num_workers` given on the command line alongside an rl_games file).
"""

from __future__ import annotations

import os
from typing import Any

from surge.errors import ConfigError


def worker_layout(num_actors: int, batched: bool, cpus: int | None = None) -> dict[str, int]:
    """rl_games' `num_actors` envs as surge workers: `num_workers` the largest divisor of
    `num_actors` not above the CPU count, each with `num_actors / num_workers` envs (a batched
    family: one EnvPool of that many `env_agents`), in 2 splits for double-buffered sampling when
    they divide evenly (throughput only: the data of a synchronous iteration is the same)."""
    cpus = max(1, cpus or os.cpu_count() or 1)
    workers = max(d for d in range(1, min(cpus, num_actors) + 1) if num_actors % d == 0)
    per_worker = num_actors // workers
    if batched:
        return {
            "num_workers": workers,
            "num_envs_per_worker": 1,
            "worker_num_splits": 1,
            "env_agents": per_worker,
        }
    splits = 2 if per_worker % 2 == 0 else 1
    return {"num_workers": workers, "num_envs_per_worker": per_worker, "worker_num_splits": splits}


def keep_num_actors(values: dict[str, Any], explicit: dict[str, Any]) -> None:
    """With `--num_workers` on the command line, keeps an rl_games file's `num_actors` (the
    product of its translated `worker_layout` in `values`): the envs per worker (`env_agents` for
    a batched family) become `num_actors / num_workers`, unless the command line gives those too.

    Raises:
        ConfigError: `num_actors` is not a multiple of `--num_workers`.
    """
    per = (
        "env_agents"
        if "env_agents" in values and values.get("num_envs_per_worker") == 1
        else "num_envs_per_worker"
    )
    if per in explicit or "num_workers" not in values or per not in values:
        return
    actors = int(values["num_workers"]) * int(values[per])
    workers = int(explicit["num_workers"])
    if workers <= 0 or actors % workers:
        raise ConfigError(
            "num_workers",
            f"the rl_games file's num_actors={actors} envs cannot be split over {workers} workers.",
            f"pass a divisor of {actors}, or --{per} as well.",
        )
    values[per] = actors // workers
    if per == "num_envs_per_worker" and "worker_num_splits" not in explicit:
        values["worker_num_splits"] = 2 if values[per] % 2 == 0 else 1
