import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import logging  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _surge_logger_propagates():
    """An in-process training run sets up the "surge" logger with propagate=False (its own
    handlers); later tests that read warnings through caplog need it to propagate again."""
    logger = logging.getLogger("surge")
    logger.propagate = True
    yield
