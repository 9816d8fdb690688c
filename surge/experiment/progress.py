"""The live progress bar of `--progress_bar` (rich): env frames, the budget's share, the rate, the
ETA and the latest mean return, redrawn from the monitor's counters.

`--progress_bar=auto` (the default) shows it when stdout is a terminal and rich is installed, else
the console gets the plain progress lines of `Monitor._print`; `rich` always shows it (a terminal
is assumed); `off` never. With the bar, the console's log lines (warnings, checkpoints) are printed
above it, and the plain progress lines go to the run's log file only (`surge_log.txt` keeps them
either way). The bar is redrawn at most every `REFRESH_SEC` seconds, from the main process's tick
(once per placement step, not per env step); with the bar off nothing of this module runs.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import sys
from typing import IO, Any

from surge.errors import ConfigError

#: seconds between two redraws of the bar (a redraw took 2-9 ms of the main process on a loaded 2-core machine)
REFRESH_SEC = 1.0
#: the `extra` of a plain progress line: with the bar shown, the console leaves it to the log file
PROGRESS_LINE = {"surge_progress_line": True}

PIP = 'pip install "surge-rl[progress]" (or pip install rich)'


def rich_installed() -> bool:
    return importlib.util.find_spec("rich") is not None


def check_progress_bar(mode: str) -> None:
    """Refuses `--progress_bar=rich` without rich installed.

    Raises:
        ConfigError: `mode` is "rich" and rich cannot be imported (the fix gives the pip command).
    """
    if mode == "rich" and not rich_installed():
        raise ConfigError("progress_bar", "rich is not installed.", f"{PIP}, or --progress_bar=auto.")


def _is_tty(stream: Any) -> bool:
    """Whether `stream` is a terminal; False for one without `isatty` or already closed (a handler
    left on the logger with a closed stream: `isatty` raises ValueError there)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def bar_wanted(mode: str, stdout: IO[str] | None = None) -> bool:
    """Whether `--progress_bar=mode` shows the bar: "rich" always, "auto" when rich is installed
    and would draw a live bar on `stdout` (sys.stdout): a terminal that is not TERM=dumb (rich's
    `Console.is_interactive`; on a dumb terminal the plain progress lines are kept), "off" never."""
    if mode == "off":
        return False
    if mode == "rich":
        return True
    stream = sys.stdout if stdout is None else stdout
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()) or not rich_installed():
        return False
    from rich.console import Console

    return bool(Console(file=stream).is_interactive)


class _SkipProgressLines(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "surge_progress_line", False)


def _fmt(x: float, spec: str) -> str:
    return format(x, spec) if math.isfinite(x) else "-"


class ProgressBar:
    """One rich progress bar on stdout (`rich.progress.Progress`, redrawn only by `update`).

    Args:
        logger: the logger whose console handlers print above the bar while it is shown (their
            plain progress lines, logged with `PROGRESS_LINE`, are dropped there: the bar says it).
        force_terminal: draw as on a terminal even when stdout is not one (`--progress_bar=rich`).
    """

    def __init__(self, logger: logging.Logger, force_terminal: bool = False):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        self.logger = logger
        self.console = Console(file=sys.stdout, force_terminal=True if force_terminal else None)
        self.progress = Progress(
            TextColumn("[bold]surge[/]"),
            BarColumn(),
            TextColumn("{task.fields[share]}"),
            TextColumn("{task.fields[frames]} env frames"),
            TextColumn("{task.fields[rate]} env frames/s"),
            TextColumn("ETA {task.fields[eta]}"),
            TextColumn("{task.fields[ret]}"),
            console=self.console,
            auto_refresh=False,  # redrawn by `update` only: no thread of its own
            transient=False,
        )
        self.task = self.progress.add_task(
            "train", total=None, share="", frames="0", rate="-", eta="-", ret=""
        )
        self._filter = _SkipProgressLines()
        self._streams: list[tuple[logging.StreamHandler, Any]] = []
        self.started = False
        #: the values of the last redraw (what the bar shows), for tests and callers
        self.shown: dict[str, Any] = {}

    def _start(self) -> None:
        from rich.file_proxy import FileProxy

        self.started = True
        self.progress.start()
        for h in self.logger.handlers:
            if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler):
                h.addFilter(self._filter)
                stream = h.stream
                if _is_tty(stream):
                    # log lines are printed above the bar instead of through it
                    self._streams.append((h, h.setStream(FileProxy(self.console, stream))))

    def update(self, env_frames: int, total: int | None, rate: float, eta: str, mean_return: float) -> None:
        """Redraws the bar: `env_frames` of `total` (None: no frame budget), `rate` env frames/s
        (nan: not known yet), `eta` as printed (`format_duration`), `mean_return` of the last
        episodes (nan: none finished yet)."""
        if not self.started:
            self._start()
        share = f"{100.0 * min(env_frames, total) / max(1, total):.1f}%" if total else ""
        fields: dict[str, Any] = {
            "share": share,
            "frames": f"{env_frames}" + (f"/{total}" if total else ""),
            "rate": _fmt(rate, ".0f"),
            "eta": eta,
            "ret": f"return {_fmt(mean_return, '.2f')}" if math.isfinite(mean_return) else "",
        }
        self.shown = {
            "env_frames": env_frames,
            "total": total,
            "rate": rate,
            "eta": eta,
            "return": mean_return,
        }
        self.progress.update(self.task, completed=env_frames, total=total, **fields)
        self.progress.refresh()

    def close(self) -> None:
        """Leaves the last bar on the screen and gives the console handlers back their streams."""
        if not self.started:
            return
        self.started = False
        self.progress.stop()
        for h in self.logger.handlers:
            h.removeFilter(self._filter)
        for h, stream in self._streams:
            h.setStream(stream)
        self._streams.clear()
