import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import logging  # noqa: E402

import pytest  # noqa: E402

# the test session is an entry point: tests use the registries (algorithms, env families) directly,
# and the registries import no plug-in themselves (surge/app/builtins.py)
import surge.app.builtins  # noqa: E402, F401


@pytest.fixture(autouse=True)
def _surge_logger_propagates():
    """An in-process training run sets up the "surge" logger with propagate=False (its own
    handlers); later tests that read warnings through caplog need it to propagate again."""
    logger = logging.getLogger("surge")
    logger.propagate = True
    yield


@pytest.fixture(autouse=True)
def _no_run_reports_outside_report_tests(request, monkeypatch):
    """In-process training runs of tests write no report.md / curves.png (docs/report.md), except in
    the report's own test modules (`test_report_*`): the final report costs ~1.2 CPU-s per run
    (matplotlib's import and a figure), minutes over the suite's runs. Runs in subprocesses (`surge
    train` from the CLI tests) write theirs. Patched in `surge.experiment.report` (what an import
    of the training run during the test binds) and in `surge.app.training_run` when imported;
    a report test gets the real functions there, whichever test imported it first."""
    import sys

    import surge.experiment.report as report  # numpy only: no torch for tests that need none

    real = {"update_report": report.update_report, "finish_report": report.finish_report}
    test_module = getattr(request.node, "module", None)
    if test_module is None or test_module.__name__.rpartition(".")[2].startswith("test_report_"):
        training_run = sys.modules.get("surge.app.training_run")
        if training_run is not None:  # imported by an earlier test while the names were patched
            for name, fn in real.items():
                monkeypatch.setattr(training_run, name, fn)
        yield
        return
    for module in [report, sys.modules.get("surge.app.training_run")]:
        if module is not None:
            monkeypatch.setattr(module, "update_report", lambda run, kind: None)
            monkeypatch.setattr(module, "finish_report", lambda run, status: None)
    yield


# The fast subset (`-m "not slow"`) is meant to stay under 3 min on an idle 2-core machine (README):
# a test outside the `slow` marker that takes longer than this is named at the end of the run, so
# it is moved to `slow` instead of slowly growing the subset. Wall-clock seconds, setup to teardown.
FAST_TEST_LIMIT_S = float(os.environ.get("SURGE_FAST_TEST_LIMIT_S", "5"))
_fast_test_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if "slow" not in report.keywords:
        _fast_test_seconds[report.nodeid] = _fast_test_seconds.get(report.nodeid, 0.0) + report.duration


# Python's named semaphores (`/dev/shm/sem.mp-*`) outlive a process that was killed before it
# released them; CI runs left 5 per run for weeks (no plain training run leaves any). Each test's
# new ones are noted, and those still there at the end that no live process holds are named in
# the summary with the test that made them, so the leak can be traced.
_SEM_PREFIX = "sem.mp-"
_sem_made_by: dict[str, str] = {}


def _semaphores() -> set[str]:
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith(_SEM_PREFIX)}
    except OSError:
        return set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before = _semaphores()
    yield
    for name in _semaphores() - before:
        _sem_made_by.setdefault(name, item.nodeid)


def _left_semaphores() -> dict[str, str]:
    """The semaphores made during this run that still exist and that no live process holds."""
    left = {n: t for n, t in _sem_made_by.items() if os.path.exists(f"/dev/shm/{n}")}
    if left:
        try:
            from shm_leftovers import held_shm_entries
        except ImportError:  # this conftest copied alone (tests/unit/test_report_conftest_patch.py)
            return left
        held = held_shm_entries()
        left = {n: t for n, t in left.items() if n not in held}
    return left


_worker_semaphores: dict[str, str] = {}  # under pytest-xdist: each worker's `_sem_made_by`


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # a pytest-xdist worker: tell the controller
        session.config.workeroutput["sem_made_by"] = dict(_sem_made_by)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: only called where it is installed
def pytest_testnodedown(node, error):
    _worker_semaphores.update(getattr(node, "workeroutput", {}).get("sem_made_by", {}))


def pytest_terminal_summary(terminalreporter):
    _sem_made_by.update(_worker_semaphores)
    left = _left_semaphores()
    if left:
        # under pytest-xdist a semaphore is named with a test that ran while it appeared: the one
        # that made it or the one beside it on the other worker
        terminalreporter.section("named semaphores left in /dev/shm, by the test that made them")
        for name, nodeid in sorted(left.items(), key=lambda kv: kv[1]):
            terminalreporter.write_line(f"{name}  {nodeid}")
    over = sorted(((s, n) for n, s in _fast_test_seconds.items() if s > FAST_TEST_LIMIT_S), reverse=True)
    if not over:
        return
    terminalreporter.section(f"tests outside the slow marker that took over {FAST_TEST_LIMIT_S:g} s")
    terminalreporter.write_line(
        "On an idle machine these belong under @pytest.mark.slow (the fast subset stays under 3 min); "
        "on a loaded one, expect some. SURGE_FAST_TEST_LIMIT_S sets the limit."
    )
    for seconds, nodeid in over:
        terminalreporter.write_line(f"{seconds:7.1f} s  {nodeid}")
