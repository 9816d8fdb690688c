"""A run that fails before its first env step leaves nothing the next start would resume."""

import pytest

from surge.cfg.cli import parse_cfg
from surge.errors import ConfigError
from surge.runtime.training_run import train


def _args(tmp_path, *extra):
    return [
        "--env=cartpole",
        "--experiment=exp",
        f"--train_dir={tmp_path}",
        "--serial_mode=True",
        "--num_workers=1",
        "--num_envs_per_worker=2",
        "--train_for_env_steps=200",
        "--hidden_size=16",
        "--encoder_mlp_layers=16",
        *extra,
    ]


def test_a_start_that_fails_before_the_first_step_is_not_resumed(tmp_path):
    # ResizeObservation needs a shape: the wrapper resolves, but making the env fails at start-up
    with pytest.raises(ConfigError, match="env_wrappers"):
        train(parse_cfg(_args(tmp_path, "--env_wrappers", "ResizeObservation")))
    exp = tmp_path / "exp"
    assert not (exp / "cfg.json").exists() and not list(exp.glob("checkpoint_p*"))
    again = parse_cfg(_args(tmp_path))
    assert again.env_wrappers == []  # not the failed start's saved value
    assert train(again) == "done"
