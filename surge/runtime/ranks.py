"""Which rank of a data-parallel run this process is, read from the environment torchrun gives
every worker process (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`; `MASTER_ADDR`/`MASTER_PORT` are read by
`torch.distributed` itself), and the settings a data-parallel run refuses.

Without torchrun (no `WORLD_SIZE`, or 1) the run is a single process group of one: nothing here
changes it. See docs/distributed.md.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from surge.cfg.config import Config
from surge.errors import ConfigError
from surge.learning.algorithm import algorithm_names, get_algorithm


def data_parallel_algorithms() -> list[str]:
    """The registered algorithms whose learners take every optimizer step through
    `LearnerBase.apply_gradients` with one optimizer (the only place gradients are all-reduced):
    those declaring `Capabilities.data_parallel`."""
    return [n for n in algorithm_names() if get_algorithm(n).capabilities.data_parallel]


@dataclass(frozen=True)
class RankInfo:
    """This process's place in the data-parallel run: `rank` in [0, world_size), `local_rank` its
    index on its machine (the GPU it uses with `--device=gpu`)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def distributed(self) -> bool:
        """True with more than one rank."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Rank 0: the only rank that writes the experiment folder."""
        return self.rank == 0


def rank_info(environ: Any = None) -> RankInfo:
    """The rank from torchrun's environment variables (`os.environ` by default).

    Raises:
        ConfigError: WORLD_SIZE, RANK or LOCAL_RANK is not an integer, or RANK is out of range.
    """
    env = os.environ if environ is None else environ
    try:
        world = int(env.get("WORLD_SIZE", "1"))
        rank = int(env.get("RANK", "0"))
        local = int(env.get("LOCAL_RANK", "0"))
    except ValueError as e:
        raise ConfigError(
            "WORLD_SIZE", f"torchrun's environment is not readable: {e}.", "start the run with torchrun."
        ) from None
    if world < 1 or not 0 <= rank < world or local < 0:
        raise ConfigError(
            "WORLD_SIZE",
            f"RANK={rank}, WORLD_SIZE={world}, LOCAL_RANK={local} is not a valid rank.",
            "start the run with torchrun, or unset these variables.",
        )
    return RankInfo(rank, world, local)


def local_env_step_budget(train_for_env_steps: int, world_size: int) -> int:
    """The env frames one rank samples: `train_for_env_steps` is the whole run's budget (all ranks
    together), split evenly, rounded up (each rank samples at least its share)."""
    return math.ceil(train_for_env_steps / max(1, world_size))


def rank_seed(seed: int | None, rank: int) -> int | None:
    """Rank `rank`'s seed: `seed + rank` (None stays None: random on every rank)."""
    return None if seed is None else seed + rank


def check_data_parallel(cfg: Config, info: RankInfo | None = None) -> None:
    """Refuses, with several ranks, the settings whose state the ranks cannot keep identical.

    Raises:
        ConfigError: naming the field: an algorithm not declaring `Capabilities.data_parallel`
            (replay learners, several optimizers), `num_policies` > 1, `with_pbt`, `self_play`, `frozen_policies`,
            `sampler_only`, `central_value`, `mixed_precision=fp16` (the GradScaler with all-reduced
            gradients is not verified: no CUDA machine in CI),
            `train_for_env_steps` smaller than the number of ranks.
    """
    info = info or rank_info()
    if not info.distributed:
        return
    why = f"is not supported with data-parallel learners (WORLD_SIZE={info.world_size}, docs/distributed.md)"
    if not get_algorithm(cfg.algo).capabilities.data_parallel:
        raise ConfigError(
            "algo",
            f"--algo={cfg.algo} {why}: only {', '.join(data_parallel_algorithms())} all-reduce their gradients.",
            "run it without torchrun.",
        )
    refused = [
        ("with_pbt", bool(cfg.with_pbt), "pass --with_pbt=False"),
        ("self_play", bool(getattr(cfg, "self_play", False)), "pass --self_play=False"),
        ("frozen_policies", bool(getattr(cfg, "frozen_policies", "")), "leave --frozen_policies empty"),
        ("num_policies", cfg.num_policies > 1, "pass --num_policies=1"),
        ("sampler_only", bool(getattr(cfg, "sampler_only", False)), "pass --sampler_only=False"),
        ("central_value", bool(getattr(cfg, "central_value", False)), "pass --central_value=False"),
        (
            "mixed_precision",
            getattr(cfg, "mixed_precision", "none") == "fp16",  # bf16 runs (no scaler)
            "pass --mixed_precision=bf16 or none",
        ),
    ]
    for name, bad, fix in refused:
        if bad:
            raise ConfigError(
                name, f"--{name}={getattr(cfg, name)!r} {why}.", f"{fix}, or run without torchrun."
            )
    if cfg.train_for_env_steps < info.world_size:
        raise ConfigError(
            "train_for_env_steps",
            f"{cfg.train_for_env_steps} env frames cannot be split over {info.world_size} data-parallel ranks "
            "(it is the budget of all ranks together).",
            f"pass --train_for_env_steps >= {info.world_size}.",
        )
