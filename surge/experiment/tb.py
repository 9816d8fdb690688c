"""`surge tb PATTERN...`: TensorBoard over every experiment whose folder matches a wildcard.

    surge tb 'cartpole_*' --train_dir=train_dir --port=6006
    surge tb 'sweep/*lr_0.001*' --dry_run      # prints the --logdir_spec, starts nothing

Sample Factory's `sample_factory/utils/tb.py` helper: each PATTERN is a glob relative to
`--train_dir` (an absolute or ./relative pattern is used as it is); every matching folder becomes
one named run of TensorBoard's `--logdir_spec` (name: its path below train_dir). TensorBoard is
started through its own `tensorboard.program` API, which prints nothing until it serves; surge
prints the URL, and Ctrl+C stops it.
"""

from __future__ import annotations

import argparse
import glob
import os
import time
from pathlib import Path

from surge.errors import ConfigError


def _pattern_path(pattern: str, train_dir: Path) -> str:
    p = Path(os.path.expanduser(pattern))
    if p.is_absolute() or pattern.startswith(("./", "../")):
        return str(p)
    return str(train_dir / pattern)


def match_experiments(patterns: list[str], train_dir: Path | str) -> list[Path]:
    """The folders matching the glob `patterns` (relative to `train_dir`), sorted, each once.

    Raises:
        ConfigError: a pattern matches no folder (the message lists those in train_dir).
    """
    train_dir = Path(os.path.expanduser(str(train_dir)))
    found: list[Path] = []
    for pattern in patterns:
        matches = sorted(Path(m) for m in glob.glob(_pattern_path(pattern, train_dir)) if os.path.isdir(m))
        if not matches:
            names = sorted(p.name for p in train_dir.iterdir() if p.is_dir()) if train_dir.is_dir() else []
            there = f"it holds {', '.join(names[:20])}" if names else "it holds no folder"
            if not train_dir.is_dir():
                there = "it does not exist"
            raise ConfigError(
                "train_dir",
                f"{pattern!r} matches no folder in --train_dir={train_dir} ({there}).",
                "quote the pattern ('cartpole_*') so the shell does not expand it, and pass the "
                "--train_dir that holds the experiments.",
            )
        found += [m for m in matches if m not in found]
    return found


def logdir_spec(folders: list[Path], train_dir: Path | str) -> str:
    """TensorBoard's `--logdir_spec`: `name:path,...`, each name the folder's path below
    `train_dir` (its own path when outside it, without a leading "/": TensorBoard reads an entry
    that starts with "/" as one path, name and all).

    Raises:
        ConfigError: a folder's path holds a comma (logdir_spec separates runs with commas).
    """
    train_dir = Path(os.path.expanduser(str(train_dir))).resolve()
    parts = []
    for f in folders:
        full = f.resolve()
        try:
            name = str(full.relative_to(train_dir))
        except ValueError:
            name = str(f).lstrip("/") or "/"
        if "," in str(full):
            raise ConfigError(
                "PATTERN",
                f"{full} has a comma in its path, which --logdir_spec cannot hold.",
                "rename the folder.",
            )
        parts.append(f"{name.replace(':', '_')}:{full}")
    return ",".join(parts)


def main(argv: list[str] | None = None) -> int:
    """`surge tb PATTERN... [--train_dir=DIR] [--port=6006] [--host=localhost] [--dry_run]`; serves
    until Ctrl+C.

    Raises:
        ConfigError: a pattern matches no folder, or the port is taken.
    """
    p = argparse.ArgumentParser(
        prog="surge tb", description="TensorBoard over experiments matched by wildcards."
    )
    p.add_argument("patterns", nargs="+", help="glob patterns of experiment folders, relative to --train_dir")
    p.add_argument("--train_dir", default="./train_dir", help="folder the patterns are relative to")
    p.add_argument("--port", type=int, default=6006, help="TensorBoard's port")
    p.add_argument("--host", default="localhost", help="interface to serve on (0.0.0.0: every one)")
    p.add_argument(
        "--reload_interval", type=float, default=30.0, help="seconds between reloads of the event files"
    )
    p.add_argument(
        "--dry_run", action="store_true", help="print the matched folders and --logdir_spec; start nothing"
    )
    args = p.parse_args(argv)
    folders = match_experiments(args.patterns, args.train_dir)
    spec = logdir_spec(folders, args.train_dir)
    for f in folders:
        print(f"Monitoring {f}")
    if args.dry_run:
        print(f"--logdir_spec={spec}")
        return 0
    from tensorboard import program

    tb = program.TensorBoard()
    tb.configure(
        argv=[
            None,
            f"--logdir_spec={spec}",
            f"--port={args.port}",
            f"--host={args.host}",
            f"--reload_interval={args.reload_interval}",
        ]
    )
    try:
        url = tb.launch()
    except program.TensorBoardServerException as e:
        raise ConfigError(
            "port", f"TensorBoard could not serve on port {args.port}: {e}", "pass another --port."
        ) from e
    print(f"TensorBoard at {url} (Ctrl+C stops it)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("TensorBoard stopped.")
    return 0
