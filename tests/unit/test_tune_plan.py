"""`surge tune`'s plan line (issue 55, item 14): it printed "about 8 min (budget 2 min)" for
--budget_seconds=150. The plan now counts what the search's own rules let run in the budget (the
sampler search stops when the training phase would not fit, a round after the first starts only
when it fits), and prints both figures as durations (150 s is 2m 30s)."""

from __future__ import annotations

import pytest

from surge.tune.measure import Measurement
from surge.tune.plan import OVERHEAD_SECONDS, make_plan
from surge.tune.search import sampler_phase, training_phase
from surge.tune.space import Layout, axis_values

# the lowest value of every field, and rates that rise with each: the sampler search steps up
# through every value (its most runs, 8 on a 2-core machine) unless the budget stops it
DEFAULT = Layout(num_workers=1, num_envs_per_worker=2, worker_num_splits=1)
AXES = axis_values(DEFAULT, cpus=2)
N_SAMPLER = 1 + sum(len(v) - 1 for v in AXES.values())
FINALISTS = 4  # --top=2, the defaults and the workers acting themselves


def _searched_seconds(bench: int, train: int, rounds: int, budget: float) -> float:
    """Seconds the real search takes: runs it (`sampler_phase`, `finalists`' count, `training_phase`) on a fake clock
    where each measurement takes its seconds plus `OVERHEAD_SECONDS`, every step up faster (so the
    sampler search stops only for the budget); `out_of_time` as `surge tune`'s."""
    now = [0.0]

    def measure(layout: Layout, phase: str, index: int) -> Measurement:
        now[0] += (bench if phase == "sampler" else train) + OVERHEAD_SECONDS[phase]
        rate = layout.num_workers * layout.num_envs_per_worker * layout.worker_num_splits
        return Measurement(float(rate), 1.0)

    def out_of_time() -> bool:
        return now[0] + FINALISTS * rounds * (train + OVERHEAD_SECONDS["training"]) > budget

    rows, _ = sampler_phase(DEFAULT, AXES, 64, measure, out_of_time)
    assert len(rows) == N_SAMPLER or out_of_time()  # only the budget stops it
    training_phase([DEFAULT] * FINALISTS, measure, rounds, budget, clock=lambda: now[0])
    return now[0]


def test_the_plan_of_a_150_s_budget_fits_it_and_says_so_in_minutes_and_seconds():
    plan = make_plan(N_SAMPLER, FINALISTS, 3, 10, 20, 150)
    assert plan.seconds <= 150 and not plan.over_budget
    assert plan.rounds_fit == 1 and plan.sampler_fit == 1
    line = plan.describe()
    assert "2m 30s" in line and "budget 2 min" not in line and "8 min" not in line
    assert "1 of the 3 rounds" in line, line


@pytest.mark.parametrize("budget", [150, 300, 500, 900, 3000])
def test_the_plan_expects_what_the_search_runs_in_the_budget(budget):
    plan = make_plan(N_SAMPLER, FINALISTS, 3, 10, 20, budget)
    ran = _searched_seconds(plan.bench, plan.train, 3, budget)
    assert plan.seconds == pytest.approx(ran)
    assert ran <= budget


def test_a_budget_too_short_for_one_round_says_how_long_it_takes_and_what_to_change():
    plan = make_plan(N_SAMPLER, FINALISTS, 3, 10, 20, 60)
    assert plan.over_budget and plan.seconds == pytest.approx(
        _searched_seconds(plan.bench, plan.train, 3, 60)
    )
    line = plan.describe()
    assert "too short" in line and "1m 00s" in line and "--budget_seconds" in line and "--top" in line


@pytest.mark.slow
def test_surge_tune_prints_a_plan_within_a_150_s_budget(monkeypatch, tmp_path, capsys):
    """The command's own first line, for the issue's `--budget_seconds=150` (measurements
    replaced by instant ones: the line is printed before any runs, and the rest of the search is
    tested above)."""
    import re

    import surge.tune.command as command

    monkeypatch.setattr(command, "measure", lambda flags, seconds, folder, name: Measurement(100.0, 1.0))
    monkeypatch.chdir(tmp_path)
    assert command.main(["--env=cartpole", "--budget_seconds=150", "--table=plain"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert "2m 30s" in line and "budget 2 min" not in line, line
    about = re.search(r"about (?:(\d+)m )?(\d+)s", line)
    assert about is not None, line
    assert 60 * int(about.group(1) or 0) + int(about.group(2)) <= 150, line
