"""`RepeatedErrors` keys a child's error by its exception, not by its stack or its child."""

import traceback

from surge.runtime.repeated_errors import RepeatedErrors, exception_text


def _formatted(message: str) -> str:
    try:
        raise RuntimeError(message)
    except RuntimeError:
        return traceback.format_exc()


def test_the_same_exception_from_another_child_is_a_repeat_and_another_exception_is_not():
    seen = RepeatedErrors()
    assert exception_text(_formatted("level file not found")) == "RuntimeError: level file not found"
    assert seen.first_raised_by("rollout worker 1", _formatted("level file not found")) is None
    assert seen.first_raised_by("rollout worker 0", _formatted("level file not found")) == "rollout worker 1"
    assert seen.first_raised_by("rollout worker 0", _formatted("another error")) is None
