"""`surge tune`'s search, plan, table and YAML file, with measurements faked (no processes): the
search finds the optimum a brute-force pass over the same grid finds, the training rounds rotate
their order, the fastest median is chosen, and the YAML loads with `--cfg`."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest

from surge.app.resolve import parse_cfg
from surge.cli import main as surge_main
from surge.envs.registry import find_family
from surge.learning.run_flags import flag_fields
from surge.tune.command import _header, build_parser, table_rows, write_yaml
from surge.tune.measure import Measurement
from surge.tune.plan import plan_seconds
from surge.tune.search import Row, choose, finalists, sampler_phase, training_phase
from surge.tune.space import LAYOUT_KEYS, Layout, admissible, axis_values

DEFAULT = Layout(num_workers=2, num_envs_per_worker=2, worker_num_splits=2)
#: a sampler phase's rows: the defaults, a faster layout (2 x 8 / 2) and one that measured nothing
SAMPLER_ROWS = (
    Row("sampler", DEFAULT, [100.0]),
    Row("sampler", Layout(2, 8, 2), [300.0]),
    Row("sampler", Layout(4, 8, 2), [math.nan]),
)


def _rate(lay: Layout) -> float:
    """A made-up throughput, unimodal in each field: best at 4 workers x 16 envs, 1 split (64 envs in all: over the cap of 16 per CPU)."""
    return (
        1000.0
        - 3 * (lay.num_workers - 4) ** 2
        - (lay.num_envs_per_worker - 16) ** 2
        - 50 * (lay.worker_num_splits - 1)
    )


def test_coordinate_search_finds_the_brute_force_optimum_measuring_each_layout_once():
    axes = axis_values(DEFAULT, cpus=2)
    assert axes == {
        "num_workers": [1, 2, 4],
        "num_envs_per_worker": [2, 4, 8, 16, 32],
        "worker_num_splits": [1, 2],
    }
    grid = [
        Layout(w, e, s)
        for w, e, s in itertools.product(
            *(axes[k] for k in ("num_workers", "num_envs_per_worker", "worker_num_splits"))
        )
    ]
    reference = max((g for g in grid if admissible(g, DEFAULT, 2) is None), key=_rate)
    calls: list[Layout] = []

    def fake(lay: Layout, phase: str, index: int) -> Measurement:
        assert phase == "sampler" and index == len(calls)
        calls.append(lay)
        return Measurement(_rate(lay), 1.0)

    rows, notes = sampler_phase(DEFAULT, axes, 2, fake)
    assert calls[0] == DEFAULT  # the default first
    assert len(calls) == len(set(calls)) < len([g for g in grid if admissible(g, DEFAULT, 2) is None])
    assert max(rows, key=lambda r: r.median).layout == reference == Layout(2, 16, 1)
    assert any("4 x 16 / 2 not tried" in n for n in notes)  # 64 envs > 16 per CPU x 2


def test_the_search_stops_when_out_of_time_and_skips_failed_runs():
    seen: list[Layout] = []

    def fake(lay: Layout, phase: str, index: int) -> Measurement:
        seen.append(lay)
        return (
            Measurement(math.nan, 1.0, "boom")
            if lay.num_envs_per_worker == 4
            else Measurement(_rate(lay), 1.0)
        )

    rows, notes = sampler_phase(DEFAULT, axis_values(DEFAULT, 2), 2, fake, out_of_time=lambda: len(seen) >= 3)
    assert len(rows) == 3 and "stopped" in notes[-1]
    assert math.isnan(rows[1].median) and rows[1].errors == ["boom"]
    # a failed run ends that field's line search (envs 8 is not tried); the workers are next
    assert [r.layout for r in rows] == [DEFAULT, Layout(2, 4, 2), Layout(4, 2, 2)]
    assert finalists(rows, DEFAULT, top=5) == [DEFAULT, Layout(4, 2, 2)]  # the failed one is not a finalist


def test_admissible_refuses_uneven_splits_and_too_many_envs_but_never_the_default():
    assert "split" in admissible(Layout(1, 3, 2), DEFAULT, 2)
    assert "envs in all" in admissible(Layout(4, 16, 1), DEFAULT, 2)
    big = Layout(8, 32, 1)
    assert admissible(big, big, 2) is None


def test_axis_values_hold_a_given_field_fixed():
    axes = axis_values(Layout(3, 5, 1), cpus=4, fixed={"num_workers"})
    assert (
        axes["num_workers"] == [3]
        and 5 in axes["num_envs_per_worker"]
        and axes["worker_num_splits"] == [1, 2]
    )


def test_finalists_are_the_default_then_the_fastest_and_the_batch_sizes_of_the_fastest():
    rows = [
        Row("sampler", DEFAULT, [100.0]),
        Row("sampler", Layout(2, 8, 2), [300.0]),
        Row("sampler", Layout(4, 8, 2), [200.0]),
    ]
    assert finalists(rows, DEFAULT, top=1) == [DEFAULT, Layout(2, 8, 2)]
    d = dataclasses.replace(DEFAULT, batch_size=1024)
    out = finalists(rows, d, top=2, batches=[512, 1024, 2048])
    assert out == [d, Layout(2, 8, 2), Layout(4, 8, 2), Layout(2, 8, 2, 512), Layout(2, 8, 2, 2048)]


def test_training_rounds_rotate_the_order_and_the_fastest_median_is_chosen():
    lays = [DEFAULT, Layout(2, 8, 2), Layout(4, 8, 2)]
    rates = {DEFAULT: [10.0, 50.0, 12.0], lays[1]: [30.0, 31.0, 29.0], lays[2]: [100.0, 20.0, 25.0]}
    order: list[Layout] = []

    def fake(lay: Layout, phase: str, index: int) -> Measurement:
        order.append(lay)
        return Measurement(rates[lay][sum(1 for x in order if x == lay) - 1], 1.0)

    rows, notes = training_phase(lays, fake, rounds=3, deadline=math.inf)
    assert order == [lays[0], lays[1], lays[2], lays[1], lays[2], lays[0], lays[2], lays[0], lays[1]]
    assert [r.median for r in rows] == [12.0, 30.0, 25.0] and not notes
    assert choose(rows) is rows[1]  # the highest median, not the highest single run (100)
    tie = [Row("training", DEFAULT, [5.0]), Row("training", lays[1], [5.0])]
    assert choose(tie) is tie[0]  # a tie keeps the default


def test_a_round_that_would_pass_the_deadline_is_not_started():
    now = [0.0]

    def fake(lay: Layout, phase: str, index: int) -> Measurement:
        now[0] += 10.0
        return Measurement(1.0, 10.0)

    rows, notes = training_phase(
        [DEFAULT, Layout(2, 8, 2)], fake, rounds=3, deadline=30.0, clock=lambda: now[0]
    )
    assert [len(r.rates) for r in rows] == [1, 1] and "1 of 3" in notes[0]


def test_plan_shrinks_the_runs_to_fit_the_budget_but_not_below_the_minimum():
    assert plan_seconds(8, 9, 10, 20, 10_000)[:2] == (10, 20)
    bench, train, total = plan_seconds(8, 9, 10, 20, 500)
    assert bench < 10 and train < 20 and total <= 500
    assert plan_seconds(8, 9, 10, 20, 1)[:2] == (4, 8)


def test_table_marks_the_chosen_row_the_default_and_a_batch_that_changes_learning():
    d = dataclasses.replace(DEFAULT, batch_size=1024)
    training = [Row("training", d, [100.0, 110.0]), Row("training", Layout(2, 8, 2, 512), [200.0])]
    cells = table_rows([Row("sampler", DEFAULT, [400.0])], training, training[1], d)
    assert cells[0][-1] == "default" and cells[0][5] == "1.00x"
    assert cells[1][4] == "105" and "default" in cells[1][-1]
    assert cells[2][5] == "1.90x" and "CHOSEN" in cells[2][-1] and "changes learning" in cells[2][-1]


def test_the_yaml_loads_with_cfg(tmp_path):
    path = tmp_path / "sub" / "t.yaml"
    values = {"env": "cartpole", "num_workers": 3, "num_envs_per_worker": 16, "worker_num_splits": 1}
    write_yaml(path, values, ["a comment", "Use: surge train --cfg=t.yaml"])
    assert path.read_text().startswith("# a comment\n# Use:")
    cfg = parse_cfg([f"--cfg={path}", f"--train_dir={tmp_path}"])
    assert (cfg.env, cfg.num_workers, cfg.num_envs_per_worker, cfg.worker_num_splits) == (
        "cartpole",
        3,
        16,
        1,
    )


def test_tune_flags_are_not_run_flags():
    own = {a.dest for a in build_parser()._actions} - {"help"}
    for env in ("CartPole-v1", "atari_pong"):
        assert not own & {f.name for f in flag_fields(find_family(env), True, "APPO")}
    assert {f"try_{k}" for k in LAYOUT_KEYS} <= own


@pytest.mark.parametrize(
    "args, field",
    [
        (["--env=CartPole-v1", "--train_dir=/tmp/x"], "train_dir"),
        (["--env=CartPole-v1", "--train_for_seconds=5"], "train_for_seconds"),
        (["--env=CartPole-v1", "--rounds=0"], "rounds"),
        (["--env=CartPole-v1", "--num_workers=2", "--try_num_workers=1,2"], "try_num_workers"),
        (["--env=CartPole-v1", "--try_num_workers=0,2"], "try_num_workers"),
        (["--budget_seconds=10"], "env"),
        (["--env=CartPole-v1", "--num_wrokers=2"], "num_wrokers"),
    ],
)
def test_bad_flags_are_refused_before_any_run(args, field, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("surge.tune.command.measure", lambda *a, **k: pytest.fail("a run was started"))
    assert surge_main(["tune", *args]) == 2
    assert field in capsys.readouterr().err


def test_the_yaml_header_says_when_the_chosen_batch_size_changes_learning(tmp_path):
    a, base = build_parser().parse_known_args(["--env=CartPole-v1", "--tune_batch"])
    assert a.tune_batch is True and base == ["--env=CartPole-v1"]
    d = Row("training", dataclasses.replace(DEFAULT, batch_size=1024), [100.0])
    fast = Row("training", Layout(2, 8, 2, 512), [150.0])
    lines = _header(a, base, "CartPole-v1", 2, fast, d, tmp_path / "t.yaml")
    text = "\n".join(lines)
    assert "CHANGES LEARNING" in text and "batch_size 512 (default 1024)" in text and "1.50x" in text
    assert "--tune_batch=True" in text
    same = Row("training", Layout(2, 8, 2, 1024), [150.0])
    assert "CHANGES LEARNING" not in "\n".join(
        _header(a, base, "CartPole-v1", 2, same, d, tmp_path / "t.yaml")
    )


def test_the_acting_in_workers_finalist_is_the_fastest_sampler_layout_with_one_split():
    """The dummy sampler cannot rank acting in workers (its random actions need no forward pass),
    so the training phase gets the fastest sampler layout with --policy_workers_per_policy=0 and
    one split (the given splits kept), once; its YAML says so."""
    from surge.tune.search import acting_twin

    rows = list(SAMPLER_ROWS)
    chosen = finalists(rows, DEFAULT, top=1)
    twin = acting_twin(rows, chosen)
    assert twin == Layout(2, 8, 1, policy_workers_per_policy=0)
    assert twin.values() == {
        "num_envs_per_worker": 8,
        "num_workers": 2,
        "worker_num_splits": 1,
        "policy_workers_per_policy": 0,
    }
    assert twin.label() == "2 x 8 / 1, acting in workers"
    assert acting_twin(rows, chosen, keep_splits=True) == Layout(2, 8, 2, policy_workers_per_policy=0)
    assert acting_twin(rows, [*chosen, twin]) is None
    assert acting_twin([Row("sampler", DEFAULT, [math.nan])], [DEFAULT]) is None


@pytest.mark.parametrize(
    "flags,tried",
    [
        ([], True),
        (["--serial_mode=True"], False),
        (["--policy_workers_per_policy=2"], False),
    ],
)
def test_acting_in_workers_is_tried_in_the_async_placement_on_the_cpu_unless_given(flags, tried, tmp_path):
    from surge.tune.command import _given_names, acts_in_workers_possible

    argv = ["--env=CartPole-v1", *flags]
    cfg = parse_cfg([*argv, f"--train_dir={tmp_path}"])
    assert acts_in_workers_possible(cfg, _given_names(argv)) is tried
    # a GPU run (not parsed here: the parser refuses --device=gpu without CUDA) keeps inference workers
    assert not acts_in_workers_possible(dataclasses.replace(cfg, device="cuda:0"), [])


def test_the_two_inference_workers_finalist_is_the_fastest_sampler_layout():
    """One inference worker per policy can bind before the cores do; the dummy sampler cannot show
    it (no forward pass), so training gets the fastest sampler layout with two, once."""
    from surge.tune.search import inference_twin

    rows = list(SAMPLER_ROWS)
    chosen = finalists(rows, DEFAULT, top=1)
    twin = inference_twin(rows, chosen)
    assert twin == Layout(2, 8, 2, policy_workers_per_policy=2)
    assert twin.values()["policy_workers_per_policy"] == 2
    assert twin.label() == "2 x 8 / 2, 2 inference workers"
    assert inference_twin(rows, [*chosen, twin]) is None
    assert inference_twin([Row("sampler", DEFAULT, [math.nan])], [DEFAULT]) is None


@pytest.mark.parametrize(
    "flags,cpus,tried",
    [
        ([], 16, True),
        ([], 4, True),
        ([], 2, False),  # no core for a second inference process beside the learner and workers
        (["--serial_mode=True"], 16, False),
        (["--policy_workers_per_policy=1"], 16, False),  # given: held fixed, as every given flag
        (["--policy_workers_per_policy=0"], 16, False),
    ],
)
def test_two_inference_workers_are_tried_in_the_async_placement_on_enough_cpus_unless_given(
    flags, cpus, tried, tmp_path
):
    from surge.tune.command import _given_names, more_inference_workers_possible

    argv = ["--env=CartPole-v1", *flags]
    cfg = parse_cfg([*argv, f"--train_dir={tmp_path}"])
    assert more_inference_workers_possible(cfg, _given_names(argv), cpus) is tried
    if tried:  # and on a GPU (not parsed here: the parser refuses --device=gpu without CUDA)
        assert more_inference_workers_possible(dataclasses.replace(cfg, device="cuda:0"), [], cpus)
