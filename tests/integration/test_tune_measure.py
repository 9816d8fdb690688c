"""One `surge tune` measurement in its own process group: a refused config comes back as an error
naming the flag (no rate), and a run past its wall-clock limit is killed with all its processes."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from surge.tune.measure import measure


def _processes_naming(text: str) -> list[int]:
    """Pids whose command line contains `text`."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if text in (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    out.append(int(p.name))
            except OSError:
                pass
    return out


@pytest.mark.slow
def test_a_refused_config_has_no_rate_and_names_the_flag(tmp_path):
    m = measure(["--env=CartPole-v1", "--num_wrokers=2"], 2, tmp_path, "bad")
    assert math.isnan(m.rate) and "num_wrokers" in (m.error or "")


@pytest.mark.slow
def test_a_run_past_its_limit_is_killed_with_its_processes(tmp_path):
    flags = ["--env=CartPole-v1", "--num_workers=2", "--num_envs_per_worker=2"]
    m = measure(flags, 1000, tmp_path, "slow", limit_seconds=3.0)  # only the limit stops it
    assert math.isnan(m.rate) and (m.error or "").startswith("killed")
    assert m.wall_seconds < 3.0 + 35  # SIGTERM, then SIGKILL 20 s later at the latest
    assert _processes_naming(str(tmp_path)) == [], "processes of the measurement are left"
    assert os.path.exists(tmp_path / "slow.log")
