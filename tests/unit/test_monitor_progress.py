"""The console progress line (issue 24, item 10): the share of --train_for_env_steps done and an
ETA from the recent rate (or from --train_for_seconds when that ends the run first), and a 10 s
rate even when the last report came late."""

import logging
from types import SimpleNamespace

import pytest

from surge.experiment.monitor import Monitor, format_duration

T0 = 1_000_000.0  # an arbitrary time.time()


def _monitor(points, frames_budget=int(1e10), seconds_budget=int(1e10), trained_before=0.0, start=T0):
    cfg = SimpleNamespace(
        stats_avg=100,
        num_policies=1,
        report_interval_sec=5.0,
        experiment_summaries_interval=10.0,
        train_for_env_steps=frames_budget,
        train_for_seconds=seconds_budget,
        env="x",
    )
    m = Monitor(cfg, None)
    m.history.clear()
    m.history.extend(points)
    m.env_frames = points[-1][1]
    m.start_clock(start, trained_before)
    return m


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45.4, "45s"), (59.6, "1m 00s"), (725, "12m 05s"), (3600 + 7 * 60 + 20, "1h 07m"),
     (2 * 86400 + 5 * 3600 + 59, "2d 05h")],
)  # fmt: skip
def test_durations_read_as_the_eta(seconds, text):
    assert format_duration(seconds) == text


def test_progress_line_shows_the_share_of_the_frame_budget_and_the_eta_from_the_recent_rate(caplog):
    # 100k frames in 100 s: 1000 frames/s in every window; 300k frames left -> 300 s
    m = _monitor([(T0, 0), (T0 + 50, 50_000), (T0 + 100, 100_000)], frames_budget=400_000)
    with caplog.at_level(logging.INFO, logger="surge"):
        m._print()
    assert caplog.messages[-1] == (
        "Env frames/s (10 s, 1 min, 5 min): 1000.0, 1000.0, 1000.0. "
        "Total env frames: 100000 (25.0% of 400000, ETA 5m 00s). "
    )


def test_the_eta_uses_the_longest_window_with_a_rate():
    # 0 -> 240 s: 240k frames (1000/s); the last 60 s: 120k more frames (2000/s, the 10 s and
    # 1 min rates). 5 min window: 360k / 300 s = 1200/s; 1.44M frames left -> 1200 s = 20m 00s
    m = _monitor([(T0, 0), (T0 + 240, 240_000), (T0 + 300, 360_000)], frames_budget=1_800_000)
    assert m.budget_text() == " (20.0% of 1800000, ETA 20m 00s)"


def test_the_eta_is_the_seconds_budget_when_it_ends_the_run_first():
    # 1000 frames/s and 300k frames left: 300 s; but 250 s budget - (40 s before a resume + 100 s
    # now) = 110 s left
    m = _monitor([(T0, 0), (T0 + 100, 100_000)], 400_000, seconds_budget=250, trained_before=40.0)
    assert m.budget_text() == " (25.0% of 400000, ETA 1m 50s (--train_for_seconds))"
    # the frame budget binds when it ends the run first: 300 s left of a 1000 s budget
    m = _monitor([(T0, 0), (T0 + 100, 100_000)], 400_000, seconds_budget=1000, trained_before=40.0)
    assert m.budget_text() == " (25.0% of 400000, ETA 5m 00s)"


def test_only_a_seconds_budget_gives_an_eta_and_no_budget_gives_nothing():
    m = _monitor([(T0, 0), (T0 + 100, 100_000)], seconds_budget=3600)
    assert m.budget_text() == " (ETA 58m 20s (--train_for_seconds))"
    m = _monitor([(T0, 0), (T0 + 100, 100_000)])
    assert m.budget_text() == ""


def test_no_rate_yet_gives_no_eta():
    m = _monitor([(T0, 0)], frames_budget=1000)
    assert m.budget_text() == " (0.0% of 1000, ETA measuring)"


def test_the_first_lines_say_eta_measuring_instead_of_an_eta_from_the_start_up():
    # issue 55: an async CartPole run counted no frame for 4 s (processes, envs), then 800 in its
    # first second of sampling: the rate since the start (160/s) gave an ETA of half an hour
    m = _monitor([(T0, 0), (T0 + 2, 0), (T0 + 4, 0), (T0 + 5, 800)], frames_budget=300_000)
    assert m.budget_text() == " (0.3% of 300000, ETA measuring)"
    # 10 s of sampling later: the rate since sampling started, not since the start of the run
    # (12000 frames in the 12 s since T0 + 4: 1000/s, 288k frames left: 4m 48s)
    m = _monitor(
        [(T0, 0), (T0 + 2, 0), (T0 + 4, 0), (T0 + 5, 800), (T0 + 10, 6000), (T0 + 16, 12_000)],
        frames_budget=300_000,
    )
    assert m.budget_text() == " (4.0% of 300000, ETA 4m 48s)"
    # a resumed run: the start-up is the time before its restored frame count grew
    m = _monitor([(T0, 50_000), (T0 + 5, 50_000), (T0 + 8, 51_000)], frames_budget=300_000)
    assert "ETA measuring" in m.budget_text()
    # a run that reached its frame budget within its first seconds: done, not measuring
    m = _monitor([(T0, 0), (T0 + 2, 0), (T0 + 3, 3000)], frames_budget=3000)
    assert m.budget_text() == " (100.0% of 3000, ETA 0s)"
    # a run with only --train_for_seconds needs no rate: its ETA is the seconds left, at once
    m = _monitor([(T0, 0), (T0 + 5, 800)], seconds_budget=600)
    assert m.budget_text() == " (ETA 9m 55s (--train_for_seconds))"


def test_the_10_s_rate_is_shown_when_the_last_report_came_late():
    # a serial run's learner batch held the loop for 15 s: no point within the last 10 s but the
    # newest; the rate is the one since the point before: 4096 frames in 16 s = 256/s
    m = _monitor([(T0, 0), (T0 + 4, 4096), (T0 + 20, 8192)])
    assert m.fps(10.0) == pytest.approx(4096 / 16)
    assert m.fps(60.0) == pytest.approx(8192 / 20)
    # with a point inside the window, the window's own rate as before: (8192 - 6000) / 8 s
    m = _monitor([(T0, 0), (T0 + 12, 6000), (T0 + 20, 8192)])
    assert m.fps(10.0) == pytest.approx(2192 / 8)
    # a point less than MIN_SPAN_SEC before the newest gives no rate of its own: the point before
    m = _monitor([(T0, 0), (T0 + 19.5, 6000), (T0 + 20, 8192)])
    assert m.fps(10.0) == pytest.approx(8192 / 20)
    # one point: no rate at all
    assert _monitor([(T0, 0)]).fps(10.0) != _monitor([(T0, 0)]).fps(10.0)  # nan


def test_ticks_many_times_a_second_keep_a_bounded_history_with_the_same_rates(monkeypatch):
    """A tick every 10 ms for 400 s (5 s of start-up, then 1000 frames/s): the history holds about
    two points a second, and the rates and start-up end are those of every tick's point (the
    reference: the frames are a known line of time)."""
    import surge.experiment.monitor as monitor_module

    clock = [T0]
    monkeypatch.setattr(monitor_module.time, "time", lambda: clock[0])
    m = _monitor([(T0, 0)])
    m.bar = None
    monkeypatch.setattr(m, "_print", lambda: None)
    monkeypatch.setattr(m, "_report_nonfinite", lambda: None)
    monkeypatch.setattr(m, "_report_faults", lambda: None)
    longest = 0
    for i in range(1, 40_001):
        clock[0] = T0 + i * 0.01
        m.env_frames = max(0, round((clock[0] - T0 - 5.0) * 1000))
        m.tick()
        longest = max(longest, len(m.history))
        if i == 2000:  # 20 s: the progress lines ask for it from their first ETA on
            assert m.sampling_since() == pytest.approx(T0 + 5.0, abs=0.011)  # the last tick without frames
    # kept points are a step apart less one tick at worst (the replaced point was a tick older)
    bound = (m.WINDOWS[-1] + 1.0) / (m.HISTORY_STEP_SEC - 0.01) + 2
    assert longest <= bound + 500  # the start-up's 500 ticks are each kept (`sampling_since`)
    assert len(m.history) <= bound
    assert m.history[-1] == (clock[0], m.env_frames)  # the newest point is the last tick's
    for window in m.WINDOWS:
        assert m.fps(window) == pytest.approx(1000.0, rel=1e-3)
