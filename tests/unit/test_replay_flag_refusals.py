"""Flags the replay learners would parse and ignore are refused before any process starts, naming
the field (review of the off-policy wiring): an input normaliser that never learns, prioritized
replay for SAC/TD3/DDPG (no importance weights, no priorities written), and DQN's epsilon schedule
over an unset frame budget."""

import pytest

from surge.app.resolve import parse_cfg
from surge.errors import ConfigError


@pytest.mark.parametrize(
    ("env", "algo", "flags", "field"),
    [
        ("CartPole-v1", "DQN", ["--normalize_input=True", "--train_for_env_steps=1000"], "normalize_input"),
        ("Pendulum-v1", "SAC", ["--normalize_input=True"], "normalize_input"),
        ("Pendulum-v1", "SAC", ["--prioritized_replay=True"], "prioritized_replay"),
        ("Pendulum-v1", "TD3", ["--prioritized_replay=True"], "prioritized_replay"),
        ("Pendulum-v1", "DDPG", ["--prioritized_replay=True"], "prioritized_replay"),
        ("CartPole-v1", "DQN", ["--train_for_seconds=600"], "train_for_env_steps"),
    ],
)
def test_a_flag_the_replay_learners_would_ignore_is_refused(tmp_path, env, algo, flags, field):
    with pytest.raises(ConfigError) as e:
        parse_cfg([f"--env={env}", f"--algo={algo}", f"--train_dir={tmp_path}", *flags])
    assert e.value.field == field and "Fix" in str(e.value)


@pytest.mark.parametrize(
    "flags",
    [
        ["--train_for_env_steps=100000"],
        ["--exploration_fraction=0"],
        ["--per_actor_eps=True"],
        ["--train_for_env_steps=1000", "--prioritized_replay=True"],  # DQN writes priorities
    ],
)
def test_dqn_accepts_a_bounded_schedule_or_none(tmp_path, flags):
    assert parse_cfg(["--env=CartPole-v1", "--algo=DQN", f"--train_dir={tmp_path}", *flags]).algo == "DQN"
