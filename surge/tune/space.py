"""What `surge tune` searches: sampler layouts (rollout workers, envs per worker, double-buffer
splits) sized for this machine's CPUs, and optionally the minibatch size (which changes learning)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass

#: the layout fields searched, in the order of the coordinate search (`surge.tune.search`)
LAYOUT_KEYS = ("num_envs_per_worker", "num_workers", "worker_num_splits")
#: envs per worker tried (with the default's own value)
ENVS_PER_WORKER = (2, 4, 8, 16, 32)
#: at most this many envs per usable CPU in all (the default layout is always allowed)
MAX_ENVS_PER_CPU = 16


@dataclass(frozen=True)
class Layout:
    """One candidate setting. `batch_size` None: the run's own (not tuned).
    `policy_workers_per_policy` None: the run's own; 0: the rollout workers act themselves (the
    acting-in-workers finalist, `surge.tune.search.acting_twin`); N >= 2: N inference workers per
    policy (`surge.tune.search.inference_twin`)."""

    num_workers: int
    num_envs_per_worker: int
    worker_num_splits: int
    batch_size: int | None = None
    policy_workers_per_policy: int | None = None

    def flags(self) -> list[str]:
        """The `--flag=value` tokens of this setting."""
        return [f"--{k}={v}" for k, v in self.values().items()]

    def values(self) -> dict[str, int]:
        """Field name -> value of the settings this layout fixes (batch_size only when tuned)."""
        out = {k: getattr(self, k) for k in LAYOUT_KEYS}
        if self.batch_size is not None:
            out["batch_size"] = self.batch_size
        if self.policy_workers_per_policy is not None:
            out["policy_workers_per_policy"] = self.policy_workers_per_policy
        return out

    def sampler_label(self) -> str:
        """`W x E / S` (workers x envs per worker / splits), and `, acting in workers` with
        `policy_workers_per_policy` 0 or `, N inference workers` with N."""
        s = f"{self.num_workers} x {self.num_envs_per_worker} / {self.worker_num_splits}"
        if self.policy_workers_per_policy == 0:
            return s + ", acting in workers"
        if self.policy_workers_per_policy is not None:
            return s + f", {self.policy_workers_per_policy} inference workers"
        return s

    def label(self) -> str:
        """`sampler_label()` and `, batch B` when the batch size is tuned."""
        return self.sampler_label() + (f", batch {self.batch_size}" if self.batch_size is not None else "")

    def sampler(self) -> Layout:
        """The same layout without a batch size (what the dummy sampler measures)."""
        return dataclasses.replace(self, batch_size=None)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else os.cpu_count())."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def axis_values(default: Layout, cpus: int, fixed: Iterable[str] = ()) -> dict[str, list[int]]:
    """The values tried for each layout field: rollout workers cpus/2, cpus and 2 x cpus (a worker
    waits on inference half of the time, so more workers than cores can pay), envs per worker
    `ENVS_PER_WORKER`, splits 1 and 2; each with the default's value. A field in `fixed` (given on
    the command line) keeps its default's value only."""
    workers = {max(1, cpus // 2), cpus, 2 * cpus}
    out = {
        "num_workers": sorted(workers | {default.num_workers}),
        "num_envs_per_worker": sorted(set(ENVS_PER_WORKER) | {default.num_envs_per_worker}),
        "worker_num_splits": sorted({1, 2, default.worker_num_splits}),
    }
    for k in fixed:
        if k in out:
            out[k] = [getattr(default, k)]
    return out


def admissible(layout: Layout, default: Layout, cpus: int) -> str | None:
    """None when `layout` may be tried, else why not: envs that do not split evenly, or more envs in
    all than `MAX_ENVS_PER_CPU` per usable CPU (and than the default has): memory and start-up grow
    with them while a CPU's throughput does not."""
    if layout.num_envs_per_worker % layout.worker_num_splits:
        return f"{layout.num_envs_per_worker} envs do not split in {layout.worker_num_splits}"
    total = layout.num_workers * layout.num_envs_per_worker
    cap = max(MAX_ENVS_PER_CPU * cpus, default.num_workers * default.num_envs_per_worker)
    if total > cap:
        return f"{total} envs in all, over {cap}"
    return None


def batch_values(default_batch: int) -> list[int]:
    """Minibatch sizes tried with `--tune_batch`: half, the same, double."""
    return sorted({max(1, default_batch // 2), default_batch, default_batch * 2})
