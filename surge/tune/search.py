"""The two phases of `surge tune`. Sampler phase: a coordinate search over the layout fields
(`space.LAYOUT_KEYS`: each field in turn, with the others at the best so far, is moved up from its
best value while the rate rises, then down if up did not pay: a line search that assumes a
single peak per field), one dummy-sampler run each, to rank layouts cheaply. Training phase: the best `top` layouts and the default, in rounds
(each round runs every finalist once, in an order rotated by one per round, so that the machine's
drift falls on all alike); the fastest median decides.

The measurement is a callable (`MeasureFn`), so that the search is tested without processes."""

from __future__ import annotations

import dataclasses
import logging
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from surge.tune.measure import Measurement
from surge.tune.space import LAYOUT_KEYS, Layout, admissible

log = logging.getLogger("surge")

#: (layout, phase "sampler" | "training", run index in that phase) -> its measurement
MeasureFn = Callable[[Layout, str, int], Measurement]


@dataclass
class Row:
    """Every measurement of one layout in one phase (env frames/s, nan for a failed run)."""

    phase: str
    layout: Layout
    rates: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        """Median env frames/s of the runs that have a rate (nan when none has)."""
        ok = [r for r in self.rates if r == r]
        return statistics.median(ok) if ok else math.nan


def _add(row: Row, m: Measurement) -> None:
    row.rates.append(m.rate)
    if m.error:
        row.errors.append(m.error)


def _best(rows: list[Row]) -> Row | None:
    ok = [r for r in rows if r.median == r.median]
    return max(ok, key=lambda r: r.median) if ok else None


def sampler_phase(
    default: Layout,
    axes: dict[str, list[int]],
    cpus: int,
    measure: MeasureFn,
    out_of_time: Callable[[], bool] = lambda: False,
) -> tuple[list[Row], list[str]]:
    """The coordinate search with the dummy sampler, from `default` (measured first) over `axes`
    (`space.axis_values`), skipping layouts `space.admissible` refuses; no new run starts once
    `out_of_time()` says so (the budget left is the training phase's). Returns the rows in the
    order measured and notes for the log (layouts skipped, the search cut short)."""
    rows: dict[Layout, Row] = {}
    notes: list[str] = []
    best = default.sampler()

    def run(layout: Layout) -> None:
        row = rows[layout] = Row("sampler", layout)
        _add(row, measure(layout, "sampler", len(rows) - 1))
        log.info("sampler %s: %.0f env frames/s%s", layout.label(), row.median, _err(row))

    run(best)
    for key in LAYOUT_KEYS:
        values = sorted(set(axes[key]) | {getattr(best, key)})
        start = values.index(getattr(best, key))
        for step in (1, -1):  # up from the best value while it gets faster, then down
            i = start + step
            while 0 <= i < len(values):
                cand = dataclasses.replace(best, **{key: values[i]})
                if cand not in rows:
                    why = admissible(cand, default, cpus)
                    if why:
                        notes.append(f"{cand.label()} not tried: {why}")
                        break
                    if out_of_time():
                        notes.append(
                            f"the sampler search stopped at its share of --budget_seconds before {cand.label()}"
                        )
                        return list(rows.values()), notes
                    run(cand)
                if not rows[cand].median > rows[best].median:  # slower, or failed (nan)
                    break
                best, i = cand, i + step
            if getattr(best, key) != values[start]:  # it got faster upwards: down is not tried
                break
    return list(rows.values()), notes


def finalists(
    sampler_rows: list[Row], default: Layout, top: int, batches: list[int] | None = None
) -> list[Layout]:
    """The `top` fastest sampler layouts and the default (always, first), and with `batches` (the
    batch sizes of `--tune_batch`) the fastest layout with each of them."""
    ranked = sorted((r for r in sampler_rows if r.median == r.median), key=lambda r: -r.median)
    out = [default]
    for r in ranked:
        if len(out) > top:
            break
        if r.layout != default.sampler():
            out.append(r.layout)
    if batches and ranked:
        for b in batches:  # the default batch size is measured with the layouts above
            cand = dataclasses.replace(ranked[0].layout, batch_size=b)
            if b != default.batch_size and cand not in out:
                out.append(cand)
    return out


def acting_twin(sampler_rows: list[Row], finalists: list[Layout], keep_splits: bool = False) -> Layout | None:
    """The fastest sampler layout with the rollout workers acting themselves
    (`--policy_workers_per_policy=0`, with one split unless `keep_splits`, the splits being given:
    a worker that acts itself has nothing to overlap a second split with), as one more training
    finalist; None when there is no measured layout or it is a finalist already. The dummy sampler cannot rank it: its random actions need no
    forward pass, so what acting in place saves (the round trip) and costs (no batching across
    workers) shows only in training."""
    fastest = _fastest_layout(sampler_rows)
    if fastest is None:
        return None
    splits = fastest.worker_num_splits if keep_splits else 1
    twin = dataclasses.replace(fastest, worker_num_splits=splits, policy_workers_per_policy=0)
    return None if twin in finalists else twin


def inference_twin(sampler_rows: list[Row], finalists: list[Layout], workers: int = 2) -> Layout | None:
    """The fastest sampler layout with `workers` inference workers per policy
    (`--policy_workers_per_policy`), as one more training finalist; None when there is no measured
    layout or it is a finalist already. One inference worker per policy is a single process: on
    many cores it can bind before the cores do (a saturated inference worker's ceiling, issue 57),
    and only training shows it, the dummy sampler's random actions needing no forward pass."""
    fastest = _fastest_layout(sampler_rows)
    if fastest is None:
        return None
    twin = dataclasses.replace(fastest, policy_workers_per_policy=workers)
    return None if twin in finalists else twin


def _fastest_layout(sampler_rows: list[Row]) -> Layout | None:
    """The layout of the row with the highest median rate (rows that measured nothing, NaN, left
    out; the first on a tie), or None when no row measured a rate."""
    measured = [r for r in sampler_rows if r.median == r.median]
    return max(measured, key=lambda r: r.median).layout if measured else None


def training_phase(
    layouts: list[Layout],
    measure: MeasureFn,
    rounds: int,
    deadline: float,
    clock: Callable[[], float] = time.time,
) -> tuple[list[Row], list[str]]:
    """`rounds` rounds of short training runs of every layout, the order rotated by one each round;
    a round after the first starts only when the last round's duration still fits before
    `deadline`. Returns one row per layout (in `layouts`' order) and notes for the log."""
    rows = [Row("training", lay) for lay in layouts]
    notes: list[str] = []
    index, last_round = 0, 0.0
    for r in range(rounds):
        t0 = clock()
        if r > 0 and t0 + last_round > deadline:
            notes.append(f"{r} of {rounds} training rounds run: the next would pass --budget_seconds")
            break
        k = r % len(rows)
        for row in rows[k:] + rows[:k]:
            _add(row, measure(row.layout, "training", index))
            index += 1
            log.info(
                "training %s, round %d: %.0f env frames/s%s",
                row.layout.label(),
                r + 1,
                row.rates[-1],
                _err(row),
            )
        last_round = clock() - t0
    return rows, notes


def choose(rows: list[Row]) -> Row | None:
    """The training row with the highest median (the first listed, the default, on a tie); None
    when no run had a rate."""
    return _best(rows)


def _err(row: Row) -> str:
    return f" ({row.errors[-1]})" if row.rates[-1] != row.rates[-1] and row.errors else ""
