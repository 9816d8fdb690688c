"""Errors surge raises for bad input, each naming what is wrong and how to fix it."""

from __future__ import annotations


class SurgeError(Exception):
    """Base class of surge's own errors."""


class ConfigError(SurgeError, ValueError):
    """A parameter has a wrong value; raised before any process starts.

    Attributes:
        field: the parameter name (as on the command line, without `--`).
        problem: what is wrong.
        fix: what to do about it.
    """

    def __init__(self, field: str, problem: str, fix: str = ""):
        # one paragraph: line breaks of an embedded message (a YAML parser's, a value's) are joined
        problem, fix = " ".join(problem.split()), " ".join(fix.split())
        self.field, self.problem, self.fix = field, problem, fix
        msg = f"--{field}: {problem}"
        if fix:
            msg += f" Fix: {fix}"
        super().__init__(msg)


class EnvError(SurgeError):
    """An environment is missing or does not follow the expected API."""


class ChildProcessFailed(SurgeError):
    """A process of the async placement crashed or hung; the message holds its traceback."""


class RunFailed(SurgeError):
    """A training run started by `surge.train` ended with status "failed": a child process crashed
    or hung, or a policy's final checkpoint could not be written (the run's log says why).

    Attributes:
        run: the `surge.api.Run` of the failed run (its `folder`, `cfg`, `summary`).
    """

    def __init__(self, message: str, run: object = None):
        super().__init__(message)
        self.run = run
