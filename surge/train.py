"""`python -m surge.train --env=... --experiment=...`: the training entry point (same as `surge train`)."""

from __future__ import annotations

import sys

from surge.errors import ConfigError, EnvError


def main(argv: list[str] | None = None) -> int:
    """Parses the config, trains, returns the exit code (0 done or interrupted, 2 bad input)."""
    # imported here, not at the top: every spawned child of the async placement imports this module
    # (multiprocessing re-runs `python -m surge.train`'s main module in each) before it can set
    # PR_SET_PDEATHSIG (`surge.runtime.child_start`), and parse_cfg's imports (gymnasium, numpy)
    # take seconds on a loaded machine
    from surge.cfg.cli import parse_cfg

    cfg = parse_cfg(argv)
    from surge.runtime.training_run import TrainingRun

    if cfg.algo == "DUMMY_SAMPLER":  # random actions through the same sampling machinery, no learning
        cfg.sampler_only, cfg.benchmark = True, True
        # the lower budget of the two (the run's log says which)
        cfg.train_for_env_steps = min(cfg.train_for_env_steps, cfg.sample_env_frames)
    run = TrainingRun(cfg)
    status = run.run()
    if cfg.algo == "DUMMY_SAMPLER" and run.summary:
        s = run.summary
        rate = s["env_frames_per_sec"]
        print(
            f"DUMMY_SAMPLER {cfg.env}: {s['total_env_frames']:.0f} env frames sampled; "
            f"{s['env_frames']:.0f} env frames in {s['seconds']:.2f} s"
            + (
                f" = {rate:.1f} env frames/s (start-up excluded)"
                if rate == rate
                else ": too short to measure a rate (raise --sample_env_frames)"
            )
        )
    return 1 if status == "failed" else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ConfigError, EnvError) as e:
        print(f"surge train: error: {e}", file=sys.stderr)
        sys.exit(2)
