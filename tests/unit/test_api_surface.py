"""The Python API's surface (issue 22, item 6): `import surge` stays cheap, `surge.train` is
callable whichever of the function and the `python -m surge.train` module was imported first,
keyword flags become the command line's, and bad input raises instead of exiting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import surge
from surge.api import flags_to_argv
from surge.errors import ConfigError, RunFailed

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_importing_surge_imports_neither_torch_nor_gymnasium_nor_numpy():
    out = _python(
        "import sys, surge\n"
        "print(sorted(m for m in ('torch', 'gymnasium', 'numpy', 'surge.api') if m in sys.modules))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "imports",
    [
        "import surge.train\nfrom surge import train",
        "from surge import train\nimport surge.train\nimport surge",
    ],
)
def test_surge_train_is_the_api_function_whichever_import_came_first(imports):
    # the CLI module `surge.train` replaces the package attribute once imported: it must still
    # call the API (`help` is refused by the API, as a ConfigError, not an exit)
    code = (
        f"{imports}\n"
        "import surge\n"
        "from surge.errors import ConfigError\n"
        "for f in (train, surge.train):\n"
        "    try:\n"
        "        f(env='CartPole-v1', help=True)\n"
        "    except ConfigError as e:\n"
        "        print(e.field)\n"
        "print(callable(surge.train.main))\n"  # the module's CLI entry point is there too
    )
    out = _python(code)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines == ["help", "help", "True"], out.stdout


def test_the_train_module_still_runs_as_a_program():
    out = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "surge.train", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    # runpy warns (here: fails) when the package import had imported `surge.train` already
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("surge ")


def test_keyword_flags_become_command_line_flags():
    argv = flags_to_argv(
        {
            "env": "CartPole-v1",
            "use_rnn": False,
            "score_to_win": None,
            "encoder_mlp_layers": [64, 32],
            "wandb_tags": (),
        }
    )
    assert argv == [
        "--env=CartPole-v1",
        "--use_rnn=False",
        "--score_to_win=None",
        "--encoder_mlp_layers",
        "64",
        "32",
        "--wandb_tags",
    ]
    # negative numbers in a list are values, not options
    assert flags_to_argv({"x": [-1, -0.5, "-2e-3"]}) == ["--x", "-1", "-0.5", "-2e-3"]


def test_keyword_flags_parse_like_the_command_line(tmp_path):
    from surge.app.resolve import parse_cfg

    flags = {
        "env": "CartPole-v1",
        "train_dir": str(tmp_path),
        "encoder_mlp_layers": [64, 32],
        "use_rnn": False,
    }
    cfg = parse_cfg(flags_to_argv(flags))
    assert cfg.encoder_mlp_layers == [64, 32] and cfg.use_rnn is False
    reference = parse_cfg(
        [
            "--env=CartPole-v1",
            f"--train_dir={tmp_path}",
            "--encoder_mlp_layers",
            "64",
            "32",
            "--use_rnn=False",
        ]
    )
    assert cfg.to_dict() == reference.to_dict()


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        ({"env": "CartPole-v1", "learning_rate": "fast"}, "learning_rate"),
        ({"env": "CartPole-v1", "help": True}, "help"),
        ({"env": "CartPole-v1", "progress_bar": "always"}, "progress_bar"),
        # list items the parser would read as options (printing the version or the help, then exiting)
        ({"env": "CartPole-v1", "wandb_tags": ["a", "--version"]}, "wandb_tags"),
        ({"env": "CartPole-v1", "wandb_tags": ["-h"]}, "wandb_tags"),
    ],
)
def test_bad_flags_raise_a_config_error_naming_the_field(flags, field, tmp_path):
    with pytest.raises(ConfigError) as info:
        surge.train(train_dir=str(tmp_path), **flags)
    assert info.value.field == field
    assert not list(tmp_path.iterdir())  # nothing was started or written


def test_a_failed_run_raises_run_failed_with_its_run(tmp_path, monkeypatch):
    import surge.app.run_config as train_module

    def failed_run(cfg):
        return type("T", (), {"summary": {}})(), "failed"

    monkeypatch.setattr(train_module, "run_config", failed_run)
    with pytest.raises(RunFailed, match="surge_log.txt") as info:
        surge.train(env="CartPole-v1", experiment="x", train_dir=str(tmp_path))
    run = info.value.run
    assert run.status == "failed" and run.folder == tmp_path / "x" and run.cfg.env == "CartPole-v1"


def test_a_finished_run_closes_its_log_file_so_a_later_run_does_not_write_into_it(tmp_path, monkeypatch):
    # a second `surge.train()` in one process logs its config notes before its own setup_logging:
    # they must not land in the previous run's surge_log.txt
    import logging
    from types import SimpleNamespace

    import surge.app.training_run as training_run
    from surge.runtime.experiment_folder import setup_logging

    log_file = tmp_path / "surge_log.txt"
    run = training_run.TrainingRun.__new__(training_run.TrainingRun)  # no cfg: only run()'s wrapper
    run.folder, run.first_frames, run.writes = SimpleNamespace(cfg_file=tmp_path / "cfg.json"), None, False

    def fake_run() -> str:
        setup_logging(log_file)
        logging.getLogger("surge").info("first run's line")
        return "done"

    monkeypatch.setattr(run, "_run", fake_run)
    monkeypatch.setattr(training_run, "finish_report", lambda run, status: None)
    assert run.run() == "done"
    logging.getLogger("surge").warning("second run's early warning")
    text = log_file.read_text()
    assert "first run's line" in text and "second run's early warning" not in text
    assert not [h for h in logging.getLogger("surge").handlers if isinstance(h, logging.FileHandler)]


@pytest.mark.parametrize(
    "imports",
    [
        "import surge.train\nfrom surge import train",  # the callable module
        "from surge import train\nimport surge.train",  # the function
    ],
)
def test_surge_train_pickles_whichever_import_came_first(imports):
    # a process pool or a Ray task pickles the callable it is given
    code = (
        f"{imports}\n"
        "import pickle, surge\n"
        "from surge.errors import ConfigError\n"
        "for f in (train, surge.train):\n"
        "    g = pickle.loads(pickle.dumps(f))\n"
        "    print(g is f)\n"
        "    try:\n"
        "        g(env='CartPole-v1', help=True)\n"
        "    except ConfigError as e:\n"
        "        print(e.field)\n"
    )
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "help", "True", "help"], out.stdout
