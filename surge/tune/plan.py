"""`surge tune`'s plan: how long each measurement runs, and what of the search fits in
`--budget_seconds` under the rules the search follows (`surge.tune.search`): the sampler search
stops when the training phase would no longer fit, a training round after the first starts only
when it still fits, and the defaults' sampler run and the first training round always run."""

from __future__ import annotations

import dataclasses

from surge.experiment.monitor import format_duration

#: estimated seconds of start-up and shut-down around a measurement's `--train_for_seconds`
#: (measured on a 2-core machine: CartPole's dummy sampler ~10 s, a training run ~23 s)
OVERHEAD_SECONDS = {"sampler": 10.0, "training": 25.0}
#: the shortest measurements the budget may shrink them to (seconds of `--train_for_seconds`)
MIN_SECONDS = {"sampler": 4, "training": 8}


def plan_seconds(
    n_sampler: int, n_training: int, bench: int, train: int, budget: float
) -> tuple[int, int, float]:
    """Seconds of one sampler and one training measurement, shrunk (to no less than `MIN_SECONDS`)
    so that `n_sampler` and `n_training` runs, with their start-up (`OVERHEAD_SECONDS`), fit in
    `budget`; and the estimated total in seconds of all of them (which the budget may cut)."""
    o1, o2 = OVERHEAD_SECONDS["sampler"], OVERHEAD_SECONDS["training"]

    def total(b: float, t: float) -> float:
        return n_sampler * (b + o1) + n_training * (t + o2)

    if total(bench, train) > budget:
        f = max(0.0, budget - total(0, 0)) / max(1.0, n_sampler * bench + n_training * train)
        bench = max(MIN_SECONDS["sampler"], int(bench * f))
        train = max(MIN_SECONDS["training"], int(train * f))
    return bench, train, total(bench, train)


@dataclasses.dataclass(frozen=True)
class Plan:
    """What `surge tune` expects to run. Seconds are wall-clock, start-up included.

    bench, train: seconds of one dummy-sampler / training measurement (`--train_for_seconds`).
    sampler_runs: the sampler search's most runs; sampler_fit: of those, how many the budget
        leaves room for (the search may also stop earlier: when a step is not faster).
    finalists: training runs per round; rounds: `--rounds`; rounds_fit: rounds the budget holds.
    seconds: the expected duration with `sampler_fit` sampler runs and `rounds_fit` rounds.
    budget: `--budget_seconds`.
    """

    bench: int
    train: int
    sampler_runs: int
    sampler_fit: int
    finalists: int
    rounds: int
    rounds_fit: int
    seconds: float
    budget: float

    @property
    def over_budget(self) -> bool:
        """True when even the defaults' sampler run and one training round pass the budget."""
        return self.seconds > self.budget

    def describe(self) -> str:
        """The plan as the line `surge tune` prints: the runs, what the budget cuts, the expected
        duration and the budget, both as durations (150 s is "2m 30s")."""
        runs = (
            f"up to {self.sampler_runs} dummy-sampler runs of {self.bench} s, then {self.rounds} "
            f"round(s) of {self.finalists} training runs of {self.train} s"
        )
        budget = f"the {format_duration(self.budget)} budget (--budget_seconds={self.budget:g})"
        expected = format_duration(self.seconds)
        if self.over_budget:
            return (
                f"{runs}. The budget is too short: the defaults' sampler run and one training round "
                f"alone take about {expected}, more than {budget}; they run anyway (raise "
                f"--budget_seconds, or lower --top)."
            )
        if self.sampler_fit < self.sampler_runs or self.rounds_fit < self.rounds:
            return (
                f"{runs}; {budget} holds about {self.sampler_fit} of the {self.sampler_runs} sampler "
                f"runs and {self.rounds_fit} of the {self.rounds} rounds: about {expected}."
            )
        return f"{runs}: about {expected} of {budget}."


def make_plan(n_sampler: int, finalists: int, rounds: int, bench: int, train: int, budget: float) -> Plan:
    """The plan of a search of at most `n_sampler` sampler runs and `rounds` rounds of `finalists`
    training runs, each run shrunk by `plan_seconds`, then cut by the search's rules (module doc),
    with the start-up of `OVERHEAD_SECONDS`."""
    bench, train, _ = plan_seconds(n_sampler, finalists * rounds, bench, train, budget)
    sampler_run = bench + OVERHEAD_SECONDS["sampler"]
    one_round = finalists * (train + OVERHEAD_SECONDS["training"])
    # the sampler search starts a run only while the whole training phase still fits after it
    sampler_fit = 1
    while sampler_fit < n_sampler and sampler_fit * sampler_run + rounds * one_round <= budget:
        sampler_fit += 1
    elapsed, rounds_fit = sampler_fit * sampler_run + one_round, 1
    while rounds_fit < rounds and elapsed + one_round <= budget:  # as `search.training_phase`
        elapsed, rounds_fit = elapsed + one_round, rounds_fit + 1
    return Plan(bench, train, n_sampler, sampler_fit, finalists, rounds, rounds_fit, elapsed, budget)
