"""`python -m surge.tune.child RESULT.json --flag=value ...`: one measurement of `surge tune` in its
own process: a training run (or, with `--algo=DUMMY_SAMPLER`, the dummy sampler, as `surge bench`)
whose throughput summary (`TrainingRun.summary`: env frames/s from the first env steps on, start-up
excluded) is written to RESULT.json with the run's status."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from surge.errors import ConfigError, EnvError


def main(argv: list[str]) -> int:
    """Runs the config of `argv[1:]` and writes `{"status": ..., "env_frames_per_sec": ..., ...}` to
    `argv[0]` (atomically: temp + rename); returns 0 done, 1 failed, 2 refused config."""
    # imported here, not at the top: the async placement's children re-import this module (see surge/train.py)
    from surge.app.resolve import parse_cfg

    _die_with_tune()
    out = Path(argv[0])
    try:
        cfg = parse_cfg(argv[1:])
    except (ConfigError, EnvError) as e:
        print(f"surge tune: error: {e}", file=sys.stderr)
        _write(out, {"status": "refused", "error": str(e)})
        return 2
    # the engine after the config is accepted: a refused one is reported without it
    from surge.app.training_run import TrainingRun
    from surge.learning.algorithm import get_algorithm

    if get_algorithm(cfg.algo).capabilities.sampler_only:  # as `surge bench` (surge/train.py)
        cfg.sampler_only, cfg.no_writes = True, True
        cfg.train_for_env_steps = min(cfg.train_for_env_steps, cfg.sample_env_frames)
    run = TrainingRun(cfg)
    status = run.run()
    _write(out, {"status": status, **run.summary})
    return 1 if status == "failed" else 0


def _die_with_tune() -> None:
    """Linux: SIGTERM to this process when `surge tune` dies, even by SIGKILL (the run stops and
    closes its workers, which die with it); exits at once when tune is already gone."""
    import ctypes
    import os
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux/glibc
        pass
    parent = os.environ.get("SURGE_TUNE_PARENT")
    if parent and os.getppid() != int(parent):
        os._exit(1)


def _write(path: Path, values: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(values))
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
