"""`surge report`: runs that differ only in seed are grouped; a group's curve and table are numpy's
mean ± std over its seeds of the values in the runs' event files (read here with tensorboard's
EventAccumulator, the reference)."""

import json

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.tensorboard import SummaryWriter

from surge.cli import main as cli_main
from surge.errors import ConfigError
from surge.experiment.compare import find_runs, group_curve, group_runs, main

STEPS = [1000, 2000, 3000, 4000, 5000]


def _run(root, lr, seed, extra_steps=()):
    folder = root / f"lr_{lr}_seed_{seed}"
    (folder / "summaries" / "0").mkdir(parents=True)
    cfg = {"env": "CartPole-v1", "algo": "APPO", "learning_rate": lr, "seed": seed, "stats_avg": 100}
    cfg.update(experiment=folder.name, train_dir=str(root), git_hash="abc", save_every_sec=seed)
    (folder / "cfg.json").write_text(json.dumps(cfg))
    rng = np.random.default_rng(seed * 100 + int(lr * 1e4))
    w = SummaryWriter(str(folder / "summaries" / "0"))
    for step in [*STEPS, *extra_steps]:
        w.add_scalar("episode/return_mean", float(rng.uniform(0, 500)), step)
        w.add_scalar("perf/env_steps", step, step)
        w.add_scalar("episode/length_mean", float(rng.uniform(0, 500)), step)
    w.close()
    return folder


def _values(folder, tag="episode/return_mean"):
    files = list((folder / "summaries" / "0").glob("events.out.tfevents.*"))
    acc = EventAccumulator(str(files[0]), size_guidance={"scalars": 0})
    acc.Reload()
    return {e.step: e.value for e in acc.Scalars(tag)}


@pytest.fixture
def sweep(tmp_path):
    # 2 learning rates x 2 seeds; one run goes further than the others (its extra point is beyond
    # what its group shares, so it is not averaged)
    return {
        (lr, seed): _run(
            tmp_path / "sweep", lr, seed, extra_steps=(6000,) if (lr, seed) == (0.001, 2) else ()
        )
        for lr in (0.001, 0.0003)
        for seed in (1, 2)
    }


def test_seeds_grouped_into_two_curves_with_numpy_mean_and_std(sweep, tmp_path):
    runs = find_runs([tmp_path / "sweep"])
    assert len(runs) == 4
    groups = group_runs(runs)
    assert len(groups) == 2
    for g in groups:
        lr = g.runs[0].cfg["learning_rate"]
        assert {r.folder for r in g.runs} == {sweep[(lr, 1)], sweep[(lr, 2)]}
        assert g.label == f"learning_rate={lr}"
        curve = group_curve(g, "episode/return_mean")
        ref = np.array([[_values(sweep[(lr, s)])[step] for step in STEPS] for s in (1, 2)])
        np.testing.assert_array_equal(curve.x, STEPS)
        np.testing.assert_allclose(curve.mean, np.mean(ref, axis=0), rtol=1e-6)
        np.testing.assert_allclose(curve.std, np.std(ref, axis=0), rtol=1e-6)
        assert curve.n == 2


def test_report_command_writes_table_and_figure(sweep, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli_main(["report", str(tmp_path / "sweep"), f"--out={out}"]) == 0
    printed = capsys.readouterr().out
    text = (out / "report.md").read_text()
    assert text in printed
    header = [
        c.strip()
        for c in next(line for line in text.splitlines() if line.startswith("| group")).split("|")[1:-1]
    ]
    rows = [line for line in text.splitlines() if line.startswith("| learning_rate=")]
    assert len(rows) == 2
    for row in rows:
        lr = float(row.split("|")[1].strip().split("=")[1])
        cells = [c.strip() for c in row.split("|")[1:-1]]
        final = [_values(sweep[(lr, s)]) for s in (1, 2)]
        last = np.array([v[max(v)] for v in final])  # each run's last value
        best = np.array([max(v.values()) for v in final])
        for cell, ref in (
            (cells[header.index("final return")], last),
            (cells[header.index("best return")], best),
        ):
            mean, std = (float(x.replace(",", "")) for x in cell.split(" ± "))
            assert mean == pytest.approx(np.mean(ref), rel=1e-3, abs=0.05)
            assert std == pytest.approx(np.std(ref), rel=1e-3, abs=0.05)
        assert cells[1].startswith("2 (seeds 1, 2)")
    import matplotlib.image

    assert matplotlib.image.imread(out / "curves.png").shape[2] in (3, 4)


def test_group_by_none_and_by_flag(sweep, tmp_path):
    runs = find_runs([tmp_path / "sweep"])
    assert len(group_runs(runs, "none")) == 4
    by_seed_flag = group_runs(runs, "seed,algo")  # "seed" as a flag name inside a list
    assert sorted(len(g.runs) for g in by_seed_flag) == [2, 2]
    assert {g.label for g in by_seed_flag} == {"seed=1", "seed=2"}
    with pytest.raises(ConfigError, match="group_by"):
        group_runs(runs, "no_such_flag")


def test_seconds_axis_and_missing_dir(sweep, tmp_path):
    runs = find_runs([sweep[(0.001, 1)], sweep[(0.001, 2)]])
    curve = group_curve(group_runs(runs)[0], "episode/return_mean", "seconds")
    assert np.all(np.diff(curve.x) >= 0) and curve.x[0] >= 0
    assert main([str(sweep[(0.001, 1)]), f"--out={tmp_path / 'x'}", "--x=seconds"]) == 0
    assert cli_main(["report", str(tmp_path / "nothing_here")]) == 2


def test_drawing_curves_leaves_the_process_matplotlib_backend_alone(tmp_path):
    # a notebook user's backend (here "svg", as if chosen by the user) stays selected after a report
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = (
        "import matplotlib\n"
        "matplotlib.use('svg')\n"
        "from surge.experiment.curves import new_figure, save_figure\n"
        "fig, axes = new_figure(1, 'x')\n"
        "axes[0].plot([0, 1], [0, 1])\n"
        f"save_figure(fig, __import__('pathlib').Path({str(tmp_path / 'c.png')!r}))\n"
        "print(matplotlib.get_backend())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    env.pop("MPLBACKEND", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["svg"]
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
