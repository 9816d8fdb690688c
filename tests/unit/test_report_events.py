"""The report's reader joins the event files of a resumed run: a later file supersedes the earlier
file's points from its first env frame on, and the training seconds leave out the time between
them (tensorboard's EventAccumulator, read here per file, is the reference)."""

import time

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.tensorboard import SummaryWriter

from surge.experiment.events import EventReader
from surge.experiment.report import run_totals


def _write(folder, steps, value, wall0):
    w = SummaryWriter(str(folder))
    for i, step in enumerate(steps):
        w.add_scalar("episode/return_mean", value + i, step, walltime=wall0 + i)
    w.close()


def _acc(f):
    acc = EventAccumulator(str(f), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def test_resumed_run_files_join_and_seconds_skip_the_stop(tmp_path):
    d = tmp_path / "exp" / "summaries" / "0"
    now = time.time()
    _write(d, [1000, 2000, 3000, 4000, 5000], 0.0, now - 1000.0)  # killed after 5000; last checkpoint at 3000
    _write(d, [3000, 4000, 6000], 100.0, now)  # resumed from 3000, 1000 s later
    files = sorted(
        d.glob("events.out.tfevents.*"), key=lambda f: _acc(f).Scalars("episode/return_mean")[0].wall_time
    )
    assert len(files) == 2
    a, b = _acc(files[0]), _acc(files[1])
    s = EventReader(tmp_path / "exp").read()[0]["episode/return_mean"]
    np.testing.assert_array_equal(s.env_frames, [1000, 2000, 3000, 4000, 6000])
    np.testing.assert_array_equal(s.values, [0.0, 1.0, 100.0, 101.0, 102.0])
    walls_a = [e.wall_time for e in a.Scalars("episode/return_mean")]
    walls_b = [e.wall_time for e in b.Scalars("episode/return_mean")]
    first_a, first_b = walls_a[0], walls_b[0]  # each file's first summary
    end_a = walls_a[-1]  # file a's last summary (its later points are superseded, not its time)
    expected = [w - first_a for w in walls_a[:2]] + [end_a - first_a + w - first_b for w in walls_b]
    np.testing.assert_allclose(s.seconds, expected, atol=1e-3)
    assert s.seconds[-1] < 100  # the 1000 s between the stop and the resume are left out


def test_a_second_read_adds_only_new_events(tmp_path):
    d = tmp_path / "exp" / "summaries" / "0"
    w = SummaryWriter(str(d))
    w.add_scalar("perf/env_steps", 10, 10)
    w.flush()
    reader = EventReader(tmp_path / "exp")
    assert list(reader.read()[0]["perf/env_steps"].env_frames) == [10]
    w.add_scalar("perf/env_steps", 20, 20)
    w.close()
    assert list(reader.read()[0]["perf/env_steps"].env_frames) == [10, 20]


def test_start_up_before_the_first_summary_is_not_training_time(tmp_path):
    # the writer is created at start-up; the first env steps are reported 50 s later (env creation,
    # a resume's loading): the training time and the env frames / s start at that first summary
    d = tmp_path / "exp" / "summaries" / "0"
    w = SummaryWriter(str(d))
    wall0 = time.time() + 50.0
    for i, frames in enumerate([100, 300, 500]):
        w.add_scalar("perf/env_steps", frames, frames, walltime=wall0 + 2.0 * i)
    w.close()
    (f,) = d.glob("events.out.tfevents.*")
    acc = _acc(f)
    events = acc.Scalars("perf/env_steps")
    assert acc.FirstEventTimestamp() < events[0].wall_time - 40  # the writer's creation, at start-up
    scalars = EventReader(tmp_path / "exp").read()
    s = scalars[0]["perf/env_steps"]
    np.testing.assert_allclose(s.seconds, [e.wall_time - events[0].wall_time for e in events], atol=1e-3)
    totals = run_totals(scalars)
    span = events[-1].wall_time - events[0].wall_time
    assert totals["seconds"] == np.float64(s.seconds[-1])
    np.testing.assert_allclose(
        totals["env_frames_per_sec"], (events[-1].step - events[0].step) / span, rtol=1e-4
    )
