"""`surge export`'s bad input: a missing experiment, an unknown format, an experiment of an
algorithm it cannot export and a missing checkpoint are refused with exit status 2 and a message
naming the flag and the fix, before any model is built."""

from __future__ import annotations

import json

from surge.cli import main as surge_main


def _export(capsys, *argv):
    status = surge_main(["export", *argv])
    return status, capsys.readouterr().err


def test_missing_experiment_is_refused(tmp_path, capsys):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "cfg.json").write_text(json.dumps({"env": "cartpole", "algo": "APPO"}))
    status, err = _export(capsys, "--experiment=nope", f"--train_dir={tmp_path}")
    assert status == 2
    assert "--experiment: no experiment 'nope'" in err and "it holds other" in err


def test_unknown_format_is_refused(tmp_path, capsys):
    status, err = _export(capsys, "--experiment=exp", f"--train_dir={tmp_path}", "--format=tflite")
    assert status == 2 and "--format: unknown format 'tflite'" in err and "--format=onnx" in err


def test_experiment_is_required(capsys):
    status, err = _export(capsys, "--format=onnx")
    assert status == 2 and "--experiment: the following arguments are required: --experiment" in err


def test_unknown_flag_is_refused_by_name(capsys):
    status, err = _export(capsys, "--experiment=e", "--opset=12")
    assert status == 2 and err.startswith("surge export: error: --opset: unrecognized arguments: --opset=12")


def test_other_algorithms_are_refused_naming_the_supported_ones(tmp_path, capsys):
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "cfg.json").write_text(json.dumps({"env": "cartpole", "algo": "DQN"}))
    status, err = _export(capsys, "--experiment=q", f"--train_dir={tmp_path}")
    assert status == 2 and "--algo=DQN" in err and "APPO, A2C" in err


def test_experiment_without_checkpoint_is_refused(tmp_path, capsys):
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "cfg.json").write_text(json.dumps({"env": "cartpole", "algo": "APPO"}))
    status, err = _export(capsys, "--experiment=e", f"--train_dir={tmp_path}")
    assert status == 2 and "has no latest checkpoint" in err


def test_policy_index_out_of_range_and_bad_tolerance_are_refused(tmp_path, capsys):
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "cfg.json").write_text(
        json.dumps({"env": "cartpole", "algo": "APPO", "num_policies": 2})
    )
    status, err = _export(capsys, "--experiment=e", f"--train_dir={tmp_path}", "--policy_index=2")
    assert status == 2 and "--policy_index: 'e' trained 2 policies" in err and "between 0 and 1" in err
    status, err = _export(capsys, "--experiment=e", f"--train_dir={tmp_path}", "--tolerance=-1")
    assert status == 2 and "--tolerance: must be a finite number >= 0" in err
