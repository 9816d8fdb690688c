"""Every training run writes report.md and curves.png in its folder, at checkpoints (in the
background) and at the end; the report's numbers are those of the run's event files (read here
with tensorboard's EventAccumulator, the reference)."""

import logging
import subprocess
from types import SimpleNamespace

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.experiment import report as report_module


def _cfg(tmp_path, *extra):
    return parse_cfg(
        [
            "--env=CartPole-v1",
            "--experiment=rep",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--seed=0",
            "--num_torch_threads=1",
            "--experiment_summaries_interval=1",
            *extra,
        ]
    )


def _reference(folder):
    """tag -> (last step, last value) of policy 0's event files."""
    out = {}
    for f in sorted((folder / "summaries" / "0").glob("events.out.tfevents.*")):
        acc = EventAccumulator(str(f), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            e = acc.Scalars(tag)[-1]
            out[tag] = (e.step, e.value)
    return out


def _number(cell):
    return float(cell.replace(",", "").split()[0])


@pytest.mark.slow
def test_report_at_checkpoint_and_end_matches_event_files(tmp_path, monkeypatch):
    writes = []
    original = report_module.write_run_report

    def recording(folder, status="running", reader=None):
        result = original(folder, status, reader)
        writes.append((status, (folder / "report.md").read_text()))
        return result

    monkeypatch.setattr(report_module, "write_run_report", recording)
    monkeypatch.setattr(report_module, "MAX_SHARE", 1.0)  # every checkpoint the thread is free for
    # a checkpoint at every training iteration: a run faster than a second still writes one
    status = train(_cfg(tmp_path, "--train_for_env_steps=4000", "--save_every_sec=0"))
    assert status == "done"
    folder = tmp_path / "rep"

    # a report at a checkpoint, in the background, then the final one
    assert [s for s, _ in writes][-1] == "done"
    assert "running" in [s for s, _ in writes[:-1]]
    assert "at a checkpoint; training goes on" in next(t for s, t in writes if s == "running")
    assert "Report: " in (folder / "surge_log.txt").read_text()

    import matplotlib.image

    image = matplotlib.image.imread(folder / "curves.png")
    assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 600

    text = (folder / "report.md").read_text()
    assert "at the end of the run: **done**" in text and "![learning curves](curves.png)" in text
    ref = _reference(folder)
    table = {}
    for line in text.split("## Latest values")[1].splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if len(cells) == 4 and cells[0].startswith("`"):
            table[cells[0].strip("`")] = (_number(cells[2]), _number(cells[3]))
    assert set(table) == set(ref) and "episode/return_mean" in table and "train/policy_lag_avg" in table
    for tag, (step, value) in ref.items():
        assert table[tag][0] == step, tag
        assert table[tag][1] == pytest.approx(value, rel=1e-3, abs=1e-6), tag
    summary = {
        c[0]: c[1] for c in (line.split("|")[1:3] for line in text.splitlines()[:20] if line.count("|") == 3)
    }
    summary = {k.strip(): v.strip() for k, v in summary.items()}
    assert _number(summary["final return"]) == pytest.approx(ref["episode/return_mean"][1], rel=1e-3)
    assert _number(summary["env frames"]) == ref["perf/env_steps"][0] >= 4000
    # the code revision of the working directory's checkout (this repository) is in the report
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if head:
        assert f"`{head}`" in summary["code"]


def test_write_report_false_and_benchmark_write_none(tmp_path):
    run = SimpleNamespace(cfg=SimpleNamespace(write_report=False), writes=True, first_frames=(0.0, 0))
    run.folder = SimpleNamespace(root=tmp_path)
    run.monitor = SimpleNamespace(writers=[])
    report_module.update_report(run, "checkpoint")
    report_module.finish_report(run, "done")
    run.cfg.write_report, run.writes = True, False  # --benchmark (or a data-parallel rank > 0)
    report_module.update_report(run, "checkpoint")
    report_module.finish_report(run, "done")
    assert not list(tmp_path.iterdir())


def test_a_failing_report_never_stops_training(tmp_path, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(report_module, "write_run_report", broken)
    r = report_module.RunReport(tmp_path)
    with caplog.at_level(logging.WARNING, logger="surge"):
        assert r.update("running")
        r.finish("done")
    assert "Could not write the report" in caplog.text and "disk full" in caplog.text
