"""`python -m surge.train --env=... --experiment=...`: the training entry point (same as `surge train`)."""

from __future__ import annotations

import sys

from surge.cfg.cli import parse_cfg
from surge.errors import ConfigError, EnvError


def main(argv: list[str] | None = None) -> int:
    """Parses the config, trains, returns the exit code (0 done or interrupted, 2 bad input)."""
    cfg = parse_cfg(argv)
    from surge.runtime.training_run import train

    status = train(cfg)
    return 1 if status == "failed" else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ConfigError, EnvError) as e:
        print(f"surge train: error: {e}", file=sys.stderr)
        sys.exit(2)
