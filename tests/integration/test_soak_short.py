"""The soak (`benchmarks/soak.py`, issue 59), short: 75 s of the `appo` scenario (two policies with
PBT, an RNN, an env raising on 1% of its steps, an evaluator) with a process of a random role
killed (SIGKILL or SIGSTOP; the main process SIGKILL only) every 12 s. The run must stop cleanly at the end, every kill must be
followed by the run's replacement of the process or by a resume of the same command, no resume may
lose more than the frames since the latest checkpoint, and nothing of the run may be left: no
process, no `/dev/shm` entry. The fast tests check the pieces the verdict rests on against planted
leftovers and a synthetic memory series."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fault_tolerance as ft  # noqa: E402
import soak  # noqa: E402
import soak_report as rep  # noqa: E402


@pytest.mark.slow
def test_a_short_soak_resolves_every_kill_and_leaves_nothing():
    # fmt: off
    res = soak.main(["--scenario=appo", "--minutes=1.25", "--kill_every=12", "--heartbeat_timeout_sec=8",
                     "--save_every_sec=5", "--eval_every=5000", "--sample_every=2", "--seed=4"])
    # fmt: on
    kills = res["kills"]
    assert len(kills) >= 3, kills
    assert res["finished"], (res["final_rc"], res["exits"])
    assert not res["unexpected_exits"], res["unexpected_exits"]
    for k in kills:
        expected = ("replacement",) if k["role"] in soak.REPLACED else ("resume",)
        # a worker kill may also be overtaken by a resume when the run ends meanwhile
        assert k["resolved_by"] in (*expected, "resume"), k
        if k["resolved_by"] == "resume":
            assert k["resumed_from"] >= k["ckpt_frames"], k  # from the latest checkpoint, or later
            assert k["lost"] <= k["bound"], k
        if "discarded_steps" in k:
            assert k["discarded_steps"] <= res["documented_rollout_bound"], k
    assert res["resumes"] >= sum(k["resolved_by"] == "resume" for k in kills)
    assert res["leftover_processes"] == 0
    assert res["leftover_shm"] == 0 and res["unattributed_shm"] == 0
    assert res["samples"], "no RSS sample taken"


def test_leftovers_count_a_process_and_a_shm_file_of_the_run(tmp_path):
    """What the soak's last two criteria read: a process started in the run's folder that is still
    alive, and a /dev/shm file named after a process of the run (torch's `torch_<pid>_...`)."""
    before = ft._shm()
    proc = subprocess.Popen(["sleep", "30"], cwd=tmp_path)
    ft.PIDS.add(proc.pid)
    planted = Path(f"/dev/shm/torch_{proc.pid}_soak_test")
    planted.write_bytes(b"x")
    try:
        procs, files, _ = ft._leftovers(before, tmp_path)
        assert (procs, files) == (1, 1)
    finally:
        planted.unlink()
        proc.kill()
        proc.wait()
    assert ft._leftovers(before, tmp_path)[:2] == (0, 0)


def test_rss_slope_of_a_lifetime_is_its_growth_per_hour():
    """A process whose RSS grows by exactly 2% of its starting 100 MB per hour (after a warm-up
    that doubles it, left out) and a replaced one (a new pid: its own lifetime) that stays flat."""
    warm, start = 60.0, 100 * 2**20
    samples = [{"t": t, "pid": 7, "title": "surge:rollout_0", "rss": start // 2 if t < warm else
                start * (1 + 0.02 * (t - warm) / 3600.0), "fds": 10} for t in np.arange(0, 900, 5.0)]  # fmt: skip
    samples += [
        {"t": t, "pid": 8, "title": "surge:rollout_0", "rss": 3 * start, "fds": 12}
        for t in np.arange(900, 1500, 5.0)
    ]
    fits = sorted(rep.lifetime_slopes(samples, warmup_sec=warm, min_span_sec=120), key=lambda f: f["pid"])
    assert [f["pid"] for f in fits] == [7, 8]
    assert fits[0]["slope_pct_per_h"] == pytest.approx(2.0, rel=1e-3)
    assert fits[1]["slope_pct_per_h"] == pytest.approx(0.0, abs=1e-9)
    mem = rep.role_memory(fits)["rollout"]
    assert mem["lifetimes"] == 2 and mem["longest_slope"] == pytest.approx(2.0, rel=1e-3)
    assert mem["weighted_slope"] == pytest.approx(2.0 * 835 / (835 + 535), rel=1e-3)


def test_the_roles_are_read_from_the_process_titles():
    assert [rep.role_of(t) for t in ("surge:rollout_1", "surge:inference_p1_0", "surge:learner_p0",
            "surge:evaluator", "main", "/usr/bin/python")] == [  # fmt: skip
        "rollout", "inference", "learner", "evaluator", "main", "other"]  # fmt: skip
    assert os.path.isdir("/dev/shm")
