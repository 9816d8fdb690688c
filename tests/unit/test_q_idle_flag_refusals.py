"""A flag another flag makes idle is refused for DQN and R2D2 (issue 20): the linear epsilon
schedule's flags with `--per_actor_eps=True`, the per-actor epsilon's with `--per_actor_eps=False`,
`--value_rescale_eps` with `--value_rescale=False`, DQN's `--priority_clip` without prioritized
replay or with C51; the same flags are accepted where they act."""

import pytest

from surge.app.resolve import parse_cfg
from surge.errors import ConfigError

DQN = ["--env=CartPole-v1", "--algo=DQN", "--train_for_env_steps=1000"]
R2D2 = ["--env=CartPole-v1", "--algo=R2D2", "--train_for_env_steps=1000"]


@pytest.mark.parametrize(
    ("base", "flags", "field", "fix"),
    [
        (R2D2, ["--exploration_final_eps=0.1"], "exploration_final_eps", "--per_actor_eps=False"),
        (R2D2, ["--exploration_fraction=0.5"], "exploration_fraction", "--per_actor_eps=False"),
        (R2D2, ["--exploration_initial_eps=0.5"], "exploration_initial_eps", "--per_actor_eps=False"),
        (
            R2D2,
            ["--per_actor_eps=False", "--per_actor_eps_base=0.3"],
            "per_actor_eps_base",
            "--per_actor_eps=True",
        ),
        (
            R2D2,
            ["--value_rescale=False", "--value_rescale_eps=0.01"],
            "value_rescale_eps",
            "--value_rescale=True",
        ),
        (
            DQN,
            ["--per_actor_eps=True", "--exploration_final_eps=0.1"],
            "exploration_final_eps",
            "--per_actor_eps=False",
        ),
        (
            DQN,
            ["--per_actor_eps=True", "--exploration_fraction=0.5"],
            "exploration_fraction",
            "--per_actor_eps=False",
        ),
        (DQN, ["--per_actor_eps_alpha=3"], "per_actor_eps_alpha", "--per_actor_eps=True"),
        (DQN, ["--priority_clip=0"], "priority_clip", "--prioritized_replay=True"),
        (
            DQN,
            ["--prioritized_replay=True", "--categorical=True", "--priority_clip=2"],
            "priority_clip",
            "leave --priority_clip out",
        ),
        (
            DQN,
            ["--prioritized_replay=True", "--dqn_loss=mse", "--priority_clip=2"],
            "priority_clip",
            "--dqn_loss=huber",
        ),
    ],
)
def test_an_idle_q_learning_flag_is_refused(tmp_path, base, flags, field, fix):
    with pytest.raises(ConfigError) as e:
        parse_cfg([*base, f"--train_dir={tmp_path}", *flags])
    assert e.value.field == field and fix in str(e.value), str(e.value)


@pytest.mark.parametrize(
    ("base", "flags"),
    [
        (R2D2, ["--per_actor_eps=False", "--exploration_final_eps=0.1", "--exploration_fraction=0.5"]),
        (R2D2, ["--per_actor_eps_base=0.3", "--per_actor_eps_alpha=3"]),
        (R2D2, ["--value_rescale_eps=0.01"]),
        (R2D2, ["--value_rescale=False", "--value_rescale_eps=0.001"]),  # the default: not set
        (DQN, ["--exploration_final_eps=0.1", "--exploration_fraction=0.5"]),
        (DQN, ["--per_actor_eps=True", "--per_actor_eps_base=0.3"]),
        (DQN, ["--prioritized_replay=True", "--priority_clip=0"]),
    ],
)
def test_the_same_flags_are_accepted_where_they_act(tmp_path, base, flags):
    assert parse_cfg([*base, f"--train_dir={tmp_path}", *flags]).algo == base[1][7:]
