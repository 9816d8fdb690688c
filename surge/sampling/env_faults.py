"""Env faults in a rollout worker.

An env that raises in `step` is a fault, not the end of the run: the exception is counted with
its message (`pop_env_faults`), the env object is closed and rebuilt with `env_factory` and reset,
and its agents' step is marked truncated and inactive (the episode ends there; the fake step is
not trained on; the episode's statistics are lost). A week-long run should survive an emulator
that crashes once in a million steps. An env that fails again right after being rebuilt
(`MAX_CONSECUTIVE_ENV_FAULTS` times in a row, reset included) is broken, not flaky: `EnvError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from surge.errors import EnvError
from surge.sampling.split_state import SplitState

if TYPE_CHECKING:  # the worker calls this: a type only, no import circle
    from surge.sampling.rollout_worker import RolloutWorker

#: an env that raises this many times in a row (its rebuilt copy failing again) stops the worker
MAX_CONSECUTIVE_ENV_FAULTS = 3


def rebuild_env(worker: RolloutWorker, split: SplitState, e_idx: int, error: Exception) -> Any:
    """Counts the fault `error` of env `e_idx` of `split` (of `worker`), closes it, builds and resets a new one
    in its place; returns the new env's first observations (a list with one per agent; a
    batched env's own `[n, ...]` array or dict of them).

    Raises:
        EnvError: no `env_factory`, or the env failed `MAX_CONSECUTIVE_ENV_FAULTS` times in a row.
    """
    key = (worker.splits.index(split), e_idx)
    while True:
        worker.env_faults += 1
        # one line: a multi-line message (a Doom match's players, each on its line) joined by " | "
        lines = [x.strip() for x in f"{type(error).__name__}: {error}".splitlines() if x.strip()]
        worker.last_env_fault = " | ".join(lines)[:300]
        streak = worker.fault_streaks[key] = worker.fault_streaks.get(key, 0) + 1
        if worker.env_factory is None or streak >= MAX_CONSECUTIVE_ENV_FAULTS:
            raise EnvError(
                f"env {worker.cfg.env!r} (worker {worker.worker_idx}, env {e_idx} of split {key[0]}) "
                f"raised {streak} time(s) in a row{' after being rebuilt' if streak > 1 else ''}; "
                f"last: {worker.last_env_fault}. Run `surge check-env --env={worker.cfg.env}` to see "
                "what is wrong with it."
            ) from error
        try:
            split.envs[e_idx].close()
        except Exception:  # noqa: BLE001 - a crashed env may not close cleanly
            pass
        worker.rebuilds += 1
        try:
            env = split.envs[e_idx] = worker.env_factory()
            seed = None
            if worker.cfg.seed is not None:  # a new, repeatable seed per rebuild
                seed = (worker.cfg.seed * 100003 + 7919 * worker.rebuilds + worker.worker_idx) % 2**32
            obs, _ = env.reset(seed=seed)
            return obs if worker.is_batched else list(obs)
        except Exception as e:  # noqa: BLE001 - the rebuilt env failed too: another fault
            error = e
