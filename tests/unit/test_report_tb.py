"""`surge tb PATTERN --dry_run`: the folders a wildcard matches below --train_dir become TensorBoard's
--logdir_spec, one named run each (Sample Factory's tb.py helper)."""

from surge.cli import main as cli_main


def test_dry_run_matches_folders_by_wildcard(tmp_path, capsys):
    for name in ("cartpole_lr1_seed1", "cartpole_lr1_seed2", "cartpole_lr2_seed1", "pong_seed1"):
        (tmp_path / name / "summaries" / "0").mkdir(parents=True)
    (tmp_path / "cartpole_notes.txt").write_text("a file, not an experiment")
    assert cli_main(["tb", "cartpole_lr1_*", "pong*", f"--train_dir={tmp_path}", "--dry_run"]) == 0
    out = capsys.readouterr().out
    spec = next(line for line in out.splitlines() if line.startswith("--logdir_spec="))
    names = ["cartpole_lr1_seed1", "cartpole_lr1_seed2", "pong_seed1"]
    assert spec == "--logdir_spec=" + ",".join(f"{n}:{(tmp_path / n).resolve()}" for n in names)

    assert cli_main(["tb", "cartpole_*", f"--train_dir={tmp_path}", "--dry_run"]) == 0
    spec = capsys.readouterr().out.splitlines()[-1]
    assert spec.count(":/") == 3 and "notes" not in spec  # three folders; the file is no run


def test_a_pattern_without_match_is_refused(tmp_path, capsys):
    (tmp_path / "cartpole_seed1").mkdir()
    assert cli_main(["tb", "doom_*", f"--train_dir={tmp_path}", "--dry_run"]) == 2
    err = capsys.readouterr().err
    assert "'doom_*' matches no folder" in err and "cartpole_seed1" in err


def test_an_absolute_pattern_outside_train_dir_gives_runs_tensorboard_reads(tmp_path, capsys):
    # TensorBoard's own parser of --logdir_spec is the reference: each folder is one named run
    from tensorboard.backend.event_processing.data_ingester import _parse_event_files_spec

    outside = tmp_path / "elsewhere"
    for name in ("exp_a", "exp_b"):
        (outside / name).mkdir(parents=True)
    (tmp_path / "train_dir").mkdir()
    pattern = str(outside / "exp_*")
    assert cli_main(["tb", pattern, f"--train_dir={tmp_path / 'train_dir'}", "--dry_run"]) == 0
    spec = capsys.readouterr().out.splitlines()[-1].removeprefix("--logdir_spec=")
    runs = _parse_event_files_spec(spec)
    assert set(runs) == {str((outside / n).resolve()) for n in ("exp_a", "exp_b")}
    assert all(name and not name.startswith("/") and name.endswith(p[-5:]) for p, name in runs.items())
