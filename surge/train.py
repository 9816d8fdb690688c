"""`python -m surge.train --env=... --experiment=...`: the training entry point (same as `surge train`).

Imported as `surge.train`, this module is also callable: `surge.train(env=..., ...)` is the Python
API's `surge.api.train` (see `_CallableModule`)."""

from __future__ import annotations

import multiprocessing
import signal
import sys
import types
from typing import Any

from surge.cfg.config import Config
from surge.errors import SurgeError
from surge.runtime.stop_signals import StopAborted, exit_status  # the standard library only


def _sampler_only(cfg: Config) -> bool:
    """Whether `--algo` declares `Capabilities.sampler_only` (DUMMY_SAMPLER: `surge bench`)."""
    # imported here for the reason parse_cfg is (see `main`): the registry imports torch
    from surge.learning.algorithm import get_algorithm

    return get_algorithm(cfg.algo).capabilities.sampler_only


def run_config(cfg: Config) -> tuple[Any, str]:
    """Runs the parsed config `cfg` (a `Config`) to its end; returns its `TrainingRun` and final
    status ("done", "interrupted", "already_done" or "failed": `TrainingRun`'s doc). With
    `--algo=DUMMY_SAMPLER`, samples random actions with no learning and no checkpoints, at most
    `--sample_env_frames` env frames. `surge train` and `surge.train(...)` both run through here."""
    # the engine (torch) when a run starts: `import surge.train` and `--help` stay light
    from surge.app.training_run import TrainingRun

    if _sampler_only(cfg):  # random actions through the same sampling machinery, no learning
        cfg.sampler_only, cfg.no_writes = True, True
        # the lower budget of the two (the run's log says which)
        cfg.train_for_env_steps = min(cfg.train_for_env_steps, cfg.sample_env_frames)
    run = TrainingRun(cfg)
    return run, run.run()


def main(argv: list[str] | None = None) -> int:
    """Parses the config, trains, returns the exit code: 0 done (or already done), 1 failed,
    128 + the signal's number when Ctrl+C (130) or SIGTERM (143) stopped it, or a second signal
    aborted it (the rule: `surge.runtime.stop_signals`, docs/reliability.md).

    Raises:
        SurgeError: a refused config or env (`surge.app.resolve.parse_cfg`: ConfigError, EnvError),
            or a checkpoint of another network (`CheckpointMismatch`); the callers print them.
    """
    # imported here, not at the top: every spawned child of the async placement imports this module
    # (multiprocessing re-runs `python -m surge.train`'s main module in each) before it can set
    # PR_SET_PDEATHSIG (`surge.runtime.child_start`), and parse_cfg's imports (gymnasium, numpy)
    # take seconds on a loaded machine
    from surge.app.resolve import parse_cfg

    try:
        cfg = parse_cfg(argv)
        run, status = run_config(cfg)
    except StopAborted as e:  # a second signal, seconds after the first: the run's log says so
        _kill_children()
        print(f"surge train: aborted by signal {e.signum}: no final checkpoint was written", file=sys.stderr)
        return exit_status(e.signum)
    except KeyboardInterrupt:  # Ctrl+C before the run's handler is set (parsing, imports)
        print("surge train: interrupted (Ctrl+C) before training started", file=sys.stderr)
        return exit_status(signal.SIGINT)
    if _sampler_only(cfg) and run.summary:
        s = run.summary
        rate = s["env_frames_per_sec"]
        print(
            f"{cfg.algo} {cfg.env}: {s['total_env_frames']:.0f} env frames sampled; "
            f"{s['env_frames']:.0f} env frames in {s['seconds']:.2f} s"
            + (
                f" = {rate:.1f} env frames/s (start-up excluded)"
                if rate == rate
                else ": too short to measure a rate (raise --sample_env_frames)"
            )
        )
    if status == "failed":
        return 1
    return run.stops.exit_status() if status == "interrupted" else 0


def _kill_children() -> None:
    """SIGKILL to the child processes an aborted run left (its stop never finished): they ignore
    SIGTERM, and multiprocessing would otherwise join them when this process exits (a learner
    busy with a checkpoint, or stopped, kept the aborted process waiting)."""
    for child in multiprocessing.active_children():
        child.kill()
        child.join(5)


class _CallableModule(types.ModuleType):
    """This module, callable as the Python API's `surge.train(**flags)`.

    `import surge.train` (the CLI, a spawned child, a user) binds the package attribute
    `surge.train` to this module, replacing the function `surge/__init__.py` bound there; calling
    the module calls that function, so `from surge import train; train(env=...)` works whichever
    was imported first."""

    def __call__(self, **flags: Any) -> Any:
        # on call, as surge/__init__.py binds the API (PEP 562): importing this module leaves
        # surge.api unimported
        from surge.api import train

        return train(**flags)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Pickled by name (a module object cannot be pickled): unpickling imports `surge.train`
        again, so `pickle.loads(pickle.dumps(surge.train)) is surge.train` (a callable passed to a
        process pool or a Ray task survives)."""
        import importlib

        return importlib.import_module, (self.__name__,)


if (
    __name__ == "surge.train"
):  # imported, not run as `python -m surge.train` (nor a spawn child's __mp_main__)
    sys.modules[__name__].__class__ = _CallableModule


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SurgeError as e:  # a refused config or env, a checkpoint of another network
        print(f"surge train: error: {e}", file=sys.stderr)
        sys.exit(2)
