"""Runs a `TrainingRun` in this process with the "surge" logger's messages captured (it does not
propagate to the root logger, so pytest's `caplog` sees nothing unless its handler is added)."""

from __future__ import annotations

import logging
from typing import Any

from surge.app.training_run import TrainingRun


def run_logged(cfg: Any, caplog: Any) -> tuple[str, list[str]]:
    """`TrainingRun(cfg).run()`'s status and the messages the run logged, in order."""
    surge_log = logging.getLogger("surge")
    surge_log.addHandler(caplog.handler)
    try:
        status = TrainingRun(cfg).run()
    finally:
        surge_log.removeHandler(caplog.handler)
    return status, caplog.messages
