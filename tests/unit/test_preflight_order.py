"""The preflight (`surge.app.preflight.validate_cfg`) runs each subsystem's checks in one fixed
order, the one a single `validate_cfg` had before the checks moved to their subsystems: with two
fields wrong, the one whose check comes first is reported (the config's own ranges, the policy
mapping, the core sizes, roles, the algorithm's flags, the population, the encoder, the budgets)."""

import pytest

from surge.app.resolve import parse_cfg
from surge.errors import ConfigError


@pytest.mark.parametrize(
    "argv, first",
    [
        (["--experiment=", "--rollout=0"], "experiment"),
        (["--max_grad_norm=-1", "--policy_mapping=bogus"], "max_grad_norm"),
        (["--policy_mapping=bogus", "--rollout=0"], "policy_mapping"),
        (["--gamma=2", "--self_play=True", "--num_policies=1"], "gamma"),
        (["--self_play=True", "--num_policies=1", "--ppo_clip_ratio=-1"], "num_policies"),
        (["--ppo_clip_ratio=-1", "--pbt_optimize_batch_size=True"], "ppo_clip_ratio"),
        (
            ["--pbt_optimize_batch_size=True", "--encoder_type=conv", "--encoder_subtype=resnet_impala"],
            "pbt_optimize_batch_size",
        ),
        (
            ["--encoder_type=conv", "--encoder_subtype=resnet_impala", "--train_for_env_steps=-1"],
            "encoder_subtype",
        ),
    ],
)
def test_of_two_wrong_fields_the_one_checked_first_is_reported(argv, first, tmp_path):
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", *argv])
    assert e.value.field == first, e.value
