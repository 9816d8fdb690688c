"""Every fix surge prints for an env's spaces works when followed, on real envs (issue 24, item 5).

A refusal of an env's spaces gives its fixes as commands in backticks (`--env_wrappers ...`,
`--encoder_type=...`); each test starts a run, takes the refusal's commands, adds each to the
same command line and checks that the run then trains (a few hundred frames, serial).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.errors import SurgeError

MINIGRID = "minigrid:MiniGrid-Empty-5x5-v0"


def _argv(tmp_path, env: str, *extra: str) -> list[str]:
    return [
        f"--env={env}",
        "--experiment=fix",
        f"--train_dir={tmp_path / 'train'}",
        "--restart_behavior=restart",
        "--serial_mode=True",
        "--num_workers=1",
        "--num_envs_per_worker=2",
        "--train_for_env_steps=256",
        "--rollout=32",
        "--batch_size=64",  # a few SGD steps, so that the learner sees the wrapped observations
        "--hidden_size=16",
        "--encoder_mlp_layers=16",
        "--num_torch_threads=1",  # the machine may be busy: one thread per process, as the workers
        *extra,
    ]


def _start(argv: list[str]) -> str:
    """The run's status ("done" when it trained: its final checkpoint is past policy version 0),
    or the message of the error that refused it."""
    try:
        cfg = parse_cfg(argv)
        status = train(cfg)
    except SurgeError as e:
        return str(e)
    final = sorted((Path(cfg.train_dir) / cfg.experiment / "checkpoint_p0").glob("checkpoint_v*.pth"))[-1]
    assert not final.name.startswith("checkpoint_v000000000_"), f"no SGD step: {final.name}"
    return status


def _fixes(message: str) -> list[list[str]]:
    """The commands a refusal suggests (in backticks after "Fix:"), as argv additions."""
    assert "Fix:" in message, message
    return [shlex.split(c) for c in re.findall(r"`(--[^`]+)`", message.split("Fix:", 1)[1])]


def _follow_each(argv: list[str], message: str) -> None:
    fixes = _fixes(message)
    assert fixes, f"no command to follow in: {message}"
    for fix in fixes:  # a later flag wins over the same flag before it (the whole --env_wrappers list)
        assert _start(argv + fix) == "done", f"following {fix} of {message!r}"


def test_minigrid_names_the_mission_space_and_its_fix_trains(tmp_path):
    pytest.importorskip("minigrid")
    argv = _argv(tmp_path, MINIGRID)
    msg = _start(argv)
    # the space gymnasium cannot flatten is named, with its key
    assert "observation_space['mission']" in msg and "MissionSpace" in msg and "flatten" in msg
    assert not (tmp_path / "train").exists()  # refused while parsing: no experiment folder, no log
    _follow_each(argv, msg)


def test_a_discrete_dict_entry_is_named_and_its_fix_keeps_the_given_wrappers(tmp_path):
    pytest.importorskip("minigrid")
    argv = _argv(tmp_path, MINIGRID, "--env_wrappers", "surge.envs.wrappers:DropUnflattenable")
    msg = _start(argv)
    assert "['direction']" in msg and "Discrete(4)" in msg
    _follow_each(argv, msg)


@pytest.mark.parametrize("env", ["FrozenLake-v1", "Blackjack-v1"])  # Discrete, Tuple of Discrete
def test_a_discrete_or_tuple_observation_fix_trains(tmp_path, env):
    argv = _argv(tmp_path, env)
    msg = _start(argv)
    assert "observation_space" in msg and "not supported" in msg
    _follow_each(argv, msg)


def test_a_small_channels_last_image_fixes_train(tmp_path):
    pytest.importorskip("minigrid")
    argv = _argv(tmp_path, MINIGRID, "--env_wrappers", "minigrid.wrappers:ImgObsWrapper")
    msg = _start(argv)
    assert "(7, 7, 3)" in msg and "channels first" in msg
    _follow_each(argv, msg)
    # the image transposed but still too small for the default conv encoder
    argv = _argv(
        tmp_path,
        MINIGRID,
        "--env_wrappers",
        "minigrid.wrappers:ImgObsWrapper",
        "surge.envs.wrappers:ChannelsFirst",
    )
    msg = _start(argv)
    assert "7x7 image" in msg and "convnet_simple" in msg
    _follow_each(argv, msg)


def test_check_env_refuses_what_train_refuses_with_the_same_fix(tmp_path):
    pytest.importorskip("minigrid")
    from surge.app.check_env import check_env, config_for_env

    flags = ["--env_wrappers", "minigrid.wrappers:ImgObsWrapper"]
    train_msg = _start(_argv(tmp_path, MINIGRID, *flags))
    with pytest.raises(SurgeError) as e:
        check_env(MINIGRID, cfg=config_for_env(MINIGRID, flags), num_steps=5)
    assert _fixes(str(e.value)) == _fixes(train_msg) != []
