"""A run that fails before its first env step leaves nothing the next start would resume."""

import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.errors import ConfigError


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


@pytest.mark.parametrize(
    "env,flag,field",
    [
        ("cartpole", "--experiment=../escaped", "experiment"),  # would write tmp_path/escaped
        ("cartpole", "--experiment=", "experiment"),  # would write into the train dir's root
        ("Pendulum-v1", "--initial_stddev=-1", "initial_stddev"),  # was a torch RuntimeError
        ("cartpole", "--reward_scale=-1", "reward_scale"),
        ("cartpole", "--vtrace_rho=-1", "vtrace_rho"),
        ("cartpole", "--num_policies=3", "num_policies"),  # with agent_index on a one-agent env
    ],
)
def test_bad_input_exits_2_with_one_line_before_anything_is_written(env, flag, field, tmp_path, capsys):
    """Issue 24: `surge train` refuses these with exit code 2 and one line naming the field and the
    fix, before any process starts or any file is written."""
    from surge.cli import main

    argv = [
        f"--env={env}",
        "--experiment=exp",
        f"--train_dir={tmp_path / 'train_dir'}",
        "--serial_mode=True",
        "--num_workers=1",
        "--num_envs_per_worker=2",
        "--train_for_env_steps=200",
        "--policy_mapping=agent_index",
        flag,  # the last value of a flag wins
    ]
    assert main(["train", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"surge train: error: --{field}: ") and " Fix: " in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not any(tmp_path.iterdir()), "nothing is written"
