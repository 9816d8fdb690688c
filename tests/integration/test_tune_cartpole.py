"""`surge tune` end to end on a tiny search over CartPole-v1 (serial placement, 1 worker, envs per
worker 2 or 8, one round): real measurements in their own processes; the YAML is written, loads with
`--cfg`, and holds the layout of the fastest training row of the printed table."""

from __future__ import annotations

import re

import pytest

from surge.app.resolve import parse_cfg
from surge.cli import main as surge_main


@pytest.mark.slow
def test_tiny_tune_writes_the_fastest_measured_setting_as_a_yaml(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tuned.yaml"
    code = surge_main(
        [
            "tune",
            "--env=CartPole-v1",
            "--serial_mode=True",
            "--num_workers=1",
            "--worker_num_splits=1",
            "--num_torch_threads=1",
            "--try_num_envs_per_worker=2,8",
            "--bench_seconds=2",
            "--train_seconds=3",
            "--rounds=1",
            "--top=1",
            "--table=plain",
            f"--out={out}",
            f"--tune_dir={tmp_path / 'runs'}",
        ]
    )
    text = capsys.readouterr().out
    assert code == 0, text
    # the plain table: phase, "W x E / S", batch, runs, median, ratio, note
    rows = re.findall(
        r"^(sampler|training)\s+(\d+) x (\d+) / (\d+)\s+\S+\s+[\d /-]+?\s+(\d+|-)\s", text, re.M
    )
    training = [(int(e), float(m)) for phase, w, e, s, m in rows if phase == "training" and m != "-"]
    assert {phase for phase, *_ in rows} == {"sampler", "training"} and len(training) == 2, text
    fastest_envs = max(training, key=lambda t: t[1])[0]
    chosen = re.search(r"^training\s+\d+ x (\d+) / \d+ .*CHOSEN", text, re.M)
    assert chosen and int(chosen.group(1)) == fastest_envs, text
    cfg = parse_cfg([f"--cfg={out}", f"--train_dir={tmp_path}"])
    assert (cfg.env, cfg.num_workers, cfg.worker_num_splits, cfg.serial_mode) == ("CartPole-v1", 1, 1, True)
    assert cfg.num_envs_per_worker == fastest_envs
    assert "# Written by surge tune" in out.read_text()
    assert not list(tmp_path.glob("tuned.yaml.tmp"))


def _async_tune_argv(out) -> list[str]:
    """A tiny tune of CartPole-v1 in the async placement: 2 workers, 8 envs each, 2 splits, one
    round of the fastest sampler layout and the defaults (and the finalists the machine adds)."""
    return [
        "tune",
        "--env=CartPole-v1",
        "--num_workers=2",
        "--try_num_envs_per_worker=8",
        "--try_worker_num_splits=2",
        "--bench_seconds=2",
        "--train_seconds=4",
        "--rounds=1",
        "--top=1",
        "--table=plain",
        f"--out={out}",
    ]


@pytest.mark.slow
def test_tune_also_trains_with_the_rollout_workers_acting_and_writes_it_when_fastest(
    tmp_path, capsys, monkeypatch
):
    """Async placement on the CPU: the training phase has the acting-in-workers finalist (one split,
    --policy_workers_per_policy=0), measured by a real run; the YAML holds whichever row is chosen."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tuned.yaml"
    code = surge_main(_async_tune_argv(out))
    text = capsys.readouterr().out
    assert code == 0, text
    acting = re.search(r"^training\s+2 x 8 / 1, acting in workers\s+default\s+(\d+)\s", text, re.M)
    assert acting and int(acting.group(1)) > 0, text
    chosen_acting = re.search(r"^training .*acting in workers.*CHOSEN", text, re.M) is not None
    cfg = parse_cfg([f"--cfg={out}", f"--train_dir={tmp_path}"])
    assert (cfg.policy_workers_per_policy == 0) is chosen_acting
    assert cfg.worker_num_splits == (1 if chosen_acting else 2)


@pytest.mark.slow
def test_tune_also_trains_with_two_inference_workers_on_enough_cpus(tmp_path, capsys, monkeypatch):
    """With 4 usable CPUs or more (here made to look so), the training phase has the fastest sampler
    layout with two inference workers per policy as a finalist, measured by a real run; the YAML
    holds whichever row is chosen."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("surge.tune.command.usable_cpus", lambda: 4)
    out = tmp_path / "tuned.yaml"
    code = surge_main(_async_tune_argv(out))
    text = capsys.readouterr().out
    assert code == 0, text
    row = re.search(r"^training\s+\d+ x \d+ / \d, 2 inference workers\s+\S+\s+(\d+)\s", text, re.M)
    assert row and int(row.group(1)) > 0, text
    chosen = re.search(r"^training .*2 inference workers.*CHOSEN", text, re.M) is not None
    cfg = parse_cfg([f"--cfg={out}", f"--train_dir={tmp_path}"])
    assert (cfg.policy_workers_per_policy == 2) is chosen
