"""The experiment folder `train_dir/experiment/` and what lives in it.

cfg.json            resolved config (resume reads it)
surge_log.txt       the run's log
summaries/0/        TensorBoard events of policy 0
checkpoint_p0/      checkpoint_*.pth (latest N), best_*.pth, milestone_*.pth
sampler_state.pth   serial placement: the sampler's state at the last stop (exact resume)
done                written when training reached its budget
report.md           the run's report, curves.png its figure (surge.experiment.report)
git_diff.patch      uncommitted changes of the code that ran (cfg.json has git_hash; surge.experiment.git_info)
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

from surge.cfg.config import Config
from surge.cfg.validate import check_experiment_name
from surge.runtime.ranks import rank_info

log = logging.getLogger("surge")


class ExperimentFolder:
    """Paths of one experiment. `policy_id` selects the per-policy folders.

    Raises:
        ConfigError: `cfg.experiment` does not name a folder inside `cfg.train_dir` (empty,
            absolute, or climbing out with `..`; `surge.cfg.validate.check_experiment_name`),
            for configs that did not come through `parse_cfg`.
    """

    def __init__(self, cfg: Config):
        check_experiment_name(cfg.train_dir, cfg.experiment)
        self.root = Path(cfg.train_dir) / cfg.experiment

    @property
    def cfg_file(self) -> Path:
        return self.root / "cfg.json"

    @property
    def log_file(self) -> Path:
        return self.root / "surge_log.txt"

    @property
    def done_file(self) -> Path:
        return self.root / "done"

    @property
    def sampler_state_file(self) -> Path:
        """The serial placement's sampler state at the last stop (`surge.runtime.serial`)."""
        return self.root / "sampler_state.pth"

    @property
    def pbt_state_file(self) -> Path:
        """PBT's state (each policy's hyper-parameters, counters, objective windows, RNG) for resume."""
        return self.root / "pbt_state.json"

    @property
    def pbt_log_file(self) -> Path:
        """PBT's decisions, one JSON object per line (`surge.population.pbt`)."""
        return self.root / "pbt_log.jsonl"

    def summaries(self, policy_id: int = 0) -> Path:
        return self.root / "summaries" / str(policy_id)

    def checkpoints(self, policy_id: int = 0) -> Path:
        return self.root / f"checkpoint_p{policy_id}"

    def wipe(self) -> None:
        """Removes the whole experiment (restart_behavior=restart)."""
        if self.root.exists():
            shutil.rmtree(self.root)

    def clear_previous_run(self) -> list[Path]:
        """Removes what a previous run left that a new run from scratch must not mix with or
        resume from: every `checkpoint_p*/` folder, `summaries/`, the `done` marker, the sampler state,
        PBT's state and log, and the report and git diff (restart_behavior=overwrite). The log and cfg.json stay (the new run appends to the log
        and rewrites cfg.json).

        Returns:
            The paths removed (empty when there was nothing to remove).
        """
        removed: list[Path] = []
        if not self.root.is_dir():
            return removed
        for p in sorted(self.root.glob("checkpoint_p*")) + [self.root / "summaries"]:
            if p.is_dir():
                shutil.rmtree(p)
                removed.append(p)
        generated = [
            self.root / n for n in ("report.md", "curves.png", "git_diff.patch")
        ]  # rewritten by the run
        for f in (
            self.done_file,
            self.sampler_state_file,
            self.pbt_state_file,
            self.pbt_log_file,
            *generated,
        ):
            if f.exists():
                f.unlink()
                removed.append(f)
        return removed


def run_log_file(cfg: Config) -> Path | None:
    """The run's log file, `surge_log.txt` in its experiment folder; None with `--no_writes` (which
    writes nothing to the folder). In a data-parallel run (torchrun) rank r > 0 writes nothing in
    the experiment folder: its log is `surge_log.txt` in the folder beside it, `<experiment>_rank<r>`."""
    if cfg.no_writes:
        return None
    rank = rank_info().rank
    if rank > 0:
        return Path(cfg.train_dir) / f"{cfg.experiment.rstrip('/')}_rank{rank}" / "surge_log.txt"
    return ExperimentFolder(cfg).log_file


class _ConsoleHandler(logging.StreamHandler):
    """The console handler `setup_logging` adds (told apart from a user's own handlers)."""


def setup_logging(log_file: Path | None = None, level: int = logging.INFO) -> None:
    """Logs to stderr and, when given, to `log_file` (appending, so resumed runs keep one log).

    A later call in the same process (another run through the Python API) points the console
    handler of an earlier call at the `sys.stderr` of now: a notebook or a test harness may have
    replaced, and closed, the one it had. Console handlers the user added are left as they are."""
    logger = logging.getLogger("surge")
    logger.setLevel(level)
    # logging's default time format, "2026-11-28 17:45:50,123" as Sample Factory's: milliseconds, so
    # that rates taken from the log's timestamps are not quantised to whole seconds
    fmt = logging.Formatter("[%(asctime)s][%(levelname)s] %(message)s")
    for h in logger.handlers:
        if isinstance(h, _ConsoleHandler) and h.stream is not sys.stderr:
            h.acquire()  # not `setStream`: it flushes the old stream, which may be closed
            try:
                h.stream = sys.stderr
            finally:
                h.release()
    if not any(
        isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
        for h in logger.handlers
    ):
        h = _ConsoleHandler(sys.stderr)
        h.setFormatter(fmt)
        logger.addHandler(h)
    for h in [h for h in logger.handlers if isinstance(h, logging.FileHandler)]:
        logger.removeHandler(h)
        h.close()
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        fh = logging.FileHandler(log_file)
        fh.setFormatter(fmt)
        logger.addHandler(fh)
    logger.propagate = False


def close_log_files() -> None:
    """Removes and closes the "surge" logger's file handlers (the run's log), so that what a later
    run in the same process logs before its own `setup_logging` does not go to this run's log."""
    logger = logging.getLogger("surge")
    for h in [h for h in logger.handlers if isinstance(h, logging.FileHandler)]:
        logger.removeHandler(h)
        h.close()
