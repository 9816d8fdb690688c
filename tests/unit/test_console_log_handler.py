"""`setup_logging` in a process that runs several times (the Python API, a notebook, pytest): the
console handler it added follows `sys.stderr` when that was replaced, even closed, in between; a
console handler the user added keeps its stream."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from surge.runtime.experiment_folder import setup_logging


@pytest.fixture
def surge_logger():
    logger = logging.getLogger("surge")
    saved = logger.handlers[:], logger.level, logger.propagate
    logger.handlers[:] = []
    yield logger
    logger.handlers[:], level, logger.propagate = saved
    logger.setLevel(level)


def test_a_second_run_logs_to_the_stderr_of_now_after_the_first_ones_was_closed(monkeypatch, surge_logger):
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    setup_logging()
    surge_logger.info("first run")
    first.close()
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    setup_logging()
    surge_logger.info("second run")
    assert second.getvalue().endswith("second run\n")
    assert len([h for h in surge_logger.handlers if isinstance(h, logging.StreamHandler)]) == 1


def test_a_console_handler_the_user_added_keeps_its_stream(monkeypatch, surge_logger):
    own = io.StringIO()
    surge_logger.addHandler(logging.StreamHandler(own))
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    setup_logging()
    surge_logger.info("to the user's stream")
    assert "to the user's stream" in own.getvalue()
    assert sys.stderr.getvalue() == ""
