"""The stop rule (`surge.runtime.stop_signals`, docs/reliability.md "Stopping"): a second signal
within `SAME_STOP_SEC` of the first is the same stop (GNU timeout signals the run twice,
microseconds apart), a later one aborts; the exit status is 128 + the first signal."""

import signal

from surge.runtime.stop_signals import SAME_STOP_SEC, StopRequests, exit_status


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_repeat_within_the_window_is_the_same_stop_and_a_later_one_aborts():
    clock = _Clock()
    stops = StopRequests(clock)
    assert not stops.requested and stops.exit_status() == 0
    assert stops.note(signal.SIGTERM) == "stop"
    assert stops.requested
    assert stops.note(signal.SIGTERM) == "same"  # timeout's signal to the group, right after its own
    clock.now += SAME_STOP_SEC * 0.9
    assert stops.note(signal.SIGINT) == "same"
    clock.now += SAME_STOP_SEC * 0.2  # past the window, counted from the first signal
    assert stops.note(signal.SIGINT) == "abort"
    assert stops.exit_status() == 143  # the first signal's


def test_the_exit_status_is_128_plus_the_signal():
    assert exit_status(signal.SIGINT) == 130 and exit_status(signal.SIGTERM) == 143
    stops = StopRequests()
    stops.note(signal.SIGINT)
    assert stops.exit_status() == 130
