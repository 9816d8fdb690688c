"""The live progress bar (issue 22, item 5): what `--progress_bar` decides, and that the bar shows
the monitor's counters (env frames of the budget, the rate, the ETA, the mean return), while the
plain progress lines go to the log file only."""

from __future__ import annotations

import io
import logging
from types import SimpleNamespace

import pytest

from surge.errors import ConfigError
from surge.experiment import progress
from surge.experiment.monitor import Monitor

T0 = 1_000_000.0


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_auto_shows_the_bar_on_a_terminal_only_and_off_never(monkeypatch):
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):  # rich's overrides
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert progress.bar_wanted("auto", _Tty()) is True
    assert progress.bar_wanted("auto", io.StringIO()) is False
    assert progress.bar_wanted("off", _Tty()) is False
    assert progress.bar_wanted("rich", io.StringIO()) is True


def test_auto_on_a_dumb_terminal_keeps_the_plain_lines(monkeypatch):
    # rich draws no live bar on TERM=dumb (its Console is not interactive there): the plain
    # progress lines must stay on the console instead of being filtered off for a bar never drawn
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "dumb")
    assert progress.bar_wanted("auto", _Tty()) is False
    assert progress.bar_wanted("rich", _Tty()) is True  # asked for: shown as rich can


def test_auto_without_rich_gives_the_plain_lines_and_rich_is_refused(monkeypatch):
    monkeypatch.setattr(progress, "rich_installed", lambda: False)
    assert progress.bar_wanted("auto", _Tty()) is False
    with pytest.raises(ConfigError, match="pip install") as info:
        progress.check_progress_bar("rich")
    assert info.value.field == "progress_bar"
    progress.check_progress_bar("auto")  # not refused: it degrades


def _monitor(mode: str) -> Monitor:
    cfg = SimpleNamespace(
        stats_avg=100,
        num_policies=1,
        report_interval_sec=5.0,
        experiment_summaries_interval=10.0,
        train_for_env_steps=400_000,
        train_for_seconds=int(1e10),
        env="x",
        progress_bar=mode,
    )
    return Monitor(cfg, None)


def test_the_bar_shows_the_monitors_counters(capsys):
    m = _monitor("rich")
    assert m.bar is not None
    # 100k frames in 100 s (1000 frames/s in every window): 300k left -> 5m 00s
    m.history.clear()
    m.history.extend([(T0, 0), (T0 + 50, 50_000), (T0 + 100, 100_000)])
    m.env_frames = 100_000
    m.start_clock(T0)
    m.add_episodes([SimpleNamespace(episode_return=r, episode_length=10, policy_id=0) for r in (10.0, 15.0)])
    m.update_bar()
    assert m.bar.shown == {
        "env_frames": 100_000,
        "total": 400_000,
        "rate": 1000.0,
        "eta": "5m 00s",
        "return": 12.5,
    }
    m.close()
    out = capsys.readouterr().out
    for text in ("25.0%", "100000/400000 env frames", "1000 env frames/s", "ETA 5m 00s", "return 12.50"):
        assert text in out, out


def test_with_the_bar_the_progress_lines_go_to_the_log_file_only(tmp_path, capsys):
    logger = logging.getLogger("surge")
    console = logging.StreamHandler(_Tty())
    log_file = logging.FileHandler(tmp_path / "log.txt")
    old = logger.handlers[:], logger.level
    logger.handlers[:] = [console, log_file]
    logger.setLevel(logging.INFO)
    try:
        m = _monitor("rich")
        m.tick(force=True)  # draws the bar, then the plain progress line
        logger.warning("a warning the console must show")
        m.close()
    finally:
        logger.handlers[:], _ = old
        logger.setLevel(old[1])
        log_file.close()
    assert console.stream.getvalue() == ""  # while the bar is shown, log lines go above it
    out = capsys.readouterr().out
    assert "a warning the console must show" in out and "Env frames/s (10 s" not in out
    text = (tmp_path / "log.txt").read_text()
    assert "Env frames/s (10 s, 1 min, 5 min)" in text and "a warning the console must show" in text
    assert isinstance(console.stream, _Tty)  # given back


def test_with_the_bar_off_the_console_gets_the_plain_lines(capsys):
    m = _monitor("off")
    assert m.bar is None
    logger = logging.getLogger("surge")
    console = logging.StreamHandler(io.StringIO())
    old = logger.handlers[:], logger.level
    logger.handlers[:] = [console]
    logger.setLevel(logging.INFO)
    try:
        m.tick(force=True)
    finally:
        logger.handlers[:], _ = old
        logger.setLevel(old[1])
    assert "Env frames/s (10 s, 1 min, 5 min)" in console.stream.getvalue()
    assert capsys.readouterr().out == ""


def test_the_bar_starts_beside_a_log_handler_whose_stream_is_closed(capsys):
    """A console handler left on the logger with a closed stream (its `isatty` raises ValueError)
    is not a terminal: the bar starts and draws, and that handler keeps its stream."""
    logger = logging.getLogger("surge")
    closed = io.StringIO()
    closed.close()
    stale = logging.StreamHandler(closed)
    old = logger.handlers[:], logger.level
    logger.handlers[:] = [stale]
    try:
        m = _monitor("rich")
        m.update_bar()
        assert m.bar is not None and m.bar.started
        m.close()
    finally:
        logger.handlers[:], _ = old
        logger.setLevel(old[1])
    assert stale.stream is closed
    assert "env frames" in capsys.readouterr().out
