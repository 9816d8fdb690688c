"""What the runners share: which experiments are finished, checking their flags before anything
starts, and the end-of-sweep report (failures with the tail of their logs)."""

from __future__ import annotations

import functools
import logging
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from surge.runner.run_description import PlannedExperiment

log = logging.getLogger("surge")

#: lines of a failed experiment's log shown in the report
TAIL_LINES = 20

#: the file in an experiment's folder that receives its process's stdout and stderr (processes runner)
OUTPUT_FILE = "runner_output.txt"


#: the runner's own log (appended at every invocation), in the sweep's folder
RUNNER_LOG = "runner_log.txt"


def log_to_sweep_folder(train_dir: str | Path, run_name: str) -> Path:
    """The runner's log also goes to `train_dir/run_name/runner_log.txt` (appended); returns its path."""
    # the runner imports the engine only where it needs it: a sweep's launcher stays torch-free
    from surge.runtime.experiment_folder import setup_logging

    path = Path(train_dir) / run_name / RUNNER_LOG
    setup_logging(path)
    return path


#: the runner's own marker of a finished experiment that surge writes no `done` for (a benchmark)
RUNNER_DONE = "runner_done"


def is_done(exp: PlannedExperiment) -> bool:
    """True when the experiment finished: surge wrote its `done` marker in the folder, or (a
    benchmark, `is_benchmark`) the runner wrote `runner_done` after it exited with 0."""
    return (exp.folder / "done").exists() or (exp.folder / RUNNER_DONE).exists()


def mark_runner_done(exp: PlannedExperiment, how: str) -> None:
    """Writes `runner_done` (atomically) in the experiment's folder; `how` is recorded in it."""
    exp.folder.mkdir(parents=True, exist_ok=True)
    tmp = exp.folder / f"{RUNNER_DONE}.tmp"
    tmp.write_text(how + "\n")
    tmp.replace(exp.folder / RUNNER_DONE)


@functools.cache
def _benchmark_flags(args: tuple[str, ...]) -> bool:
    # torch and the engine: only when a sweep's flags are checked (as below)
    from surge.app.resolve import parse_cfg

    try:
        cfg = parse_cfg(list(args))
    except Exception:  # flags refused here (e.g. --check_flags=False, an env of the cluster): read them
        flags = {}
        for a in args:
            if a.startswith("--") and "=" in a:
                k, v = a[2:].split("=", 1)
                flags[k] = v
        return _sampler_only(flags.get("algo", "")) or flags.get("no_writes", "").lower() in (
            "true",
            "1",
            "yes",
            "y",
            "t",
        )
    return bool(cfg.no_writes) or _sampler_only(cfg.algo)


def _sampler_only(algo: str) -> bool:
    """Whether `--algo=algo` names a registered sampler-only algorithm (`Capabilities.sampler_only`,
    a benchmark); an unknown name is not one."""
    import surge.app.builtins  # noqa: F401  (torch: the built-in algorithms, only when a sweep asks)
    from surge.learning.algorithm import registered_algorithm

    found = registered_algorithm(algo)
    return found is not None and found.capabilities.sampler_only


def is_benchmark(tokens: Sequence[str]) -> bool:
    """True for a `surge.train` command that writes no `done` marker: `--no_writes=True` or a
    sampler-only `--algo` (`Capabilities.sampler_only`, DUMMY_SAMPLER; decided from its parsed config, `surge.app.resolve.parse_cfg`; from the
    flags as written when they do not parse). Such an experiment is done when it exits with 0
    without being stopped by the runner; the runner then writes `runner_done` in its folder."""
    args = surge_train_args(tokens)
    return args is not None and _benchmark_flags(tuple(args))


def command_tokens(exp: PlannedExperiment) -> list[str]:
    """The experiment's command as argv; a leading `python`/`python3` becomes this interpreter
    (`sys.executable`), so experiments run in the runner's environment, as in Sample Factory."""
    tokens = exp.tokens
    if tokens and tokens[0] in ("python", "python3"):
        tokens[0] = sys.executable
    return tokens


def surge_train_args(tokens: Sequence[str]) -> list[str] | None:
    """The flags of a `python -m surge.train ...` (or `surge train ...`) command, else None."""
    t = list(tokens)
    if len(t) >= 3 and Path(t[0]).name.startswith("python") and t[1:3] == ["-m", "surge.train"]:
        return t[3:]
    if len(t) >= 2 and Path(t[0]).name == "surge" and t[1] == "train":
        return t[2:]
    return None


def check_flags(experiments: Sequence[PlannedExperiment]) -> None:
    """Parses each `surge.train` command's flags as `surge train` would (other commands are not
    checked), so a bad flag stops the sweep before any experiment starts.

    Raises:
        ConfigError, EnvError: of the first experiment whose flags are refused; the message names it.
    """
    # torch and the engine: only when a sweep's flags are checked (a launcher stays torch-free)
    from surge.app.resolve import parse_cfg
    from surge.errors import ConfigError, EnvError

    for exp in experiments:
        args = surge_train_args(exp.tokens)
        if args is None:
            continue
        try:
            parse_cfg(args)
        except ConfigError as e:
            raise ConfigError(
                e.field, f"{e.problem} (experiment {exp.name}: {exp.cmd})", e.fix or "fix the run module."
            ) from e
        except EnvError as e:
            raise EnvError(f"experiment {exp.name}: {e}") from e


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines of a text file ('' when it does not exist)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class Outcome:
    """How one experiment of the sweep ended in this invocation of the runner.

    status: "done" (finished now), "skipped" (was already done), "failed" (exit code != 0, or it
    exited without finishing while the runner was not stopping), "interrupted" (stopped by the
    runner's Ctrl+C; the next run of the sweep resumes it), "not_started" (the runner stopped first).
    """

    exp: PlannedExperiment
    status: str
    returncode: int | None = None
    seconds: float = 0.0
    log_file: Path | None = None


def report(outcomes: Sequence[Outcome]) -> int:
    """Logs one line per experiment, then each failure with the tail of its log; returns the
    runner's exit code: 1 when any failed, 130 when the runner was stopped before all finished,
    else 0."""
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
        code = "" if o.returncode is None else f", exit code {o.returncode}"
        took = f", {o.seconds:.0f} s" if o.seconds else ""
        log.info("  %-12s %s%s%s", o.status, o.exp.folder, code, took)
    log.info("Sweep: %s.", ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    failed = [o for o in outcomes if o.status == "failed"]
    for o in failed:
        where = o.log_file if o.log_file is not None else o.exp.folder / "surge_log.txt"
        text = tail(where) or tail(o.exp.folder / "surge_log.txt")
        log.error(
            "FAILED %s (exit code %s)\n  command: %s\n  last %d lines of %s:\n%s",
            o.exp.name,
            o.returncode,
            o.exp.cmd,
            TAIL_LINES,
            where,
            "\n".join("    " + line for line in text.splitlines()) or "    (empty)",
        )
    if failed:
        return 1
    if any(o.status in ("interrupted", "not_started") for o in outcomes):
        log.info(
            "Stopped before the sweep finished: the same command resumes it (finished experiments are skipped)."
        )
        return 130
    return 0


def quote(tokens: Sequence[str]) -> str:
    return " ".join(shlex.quote(t) for t in tokens)
