"""Refusals of rl_games' shipped files that no surge flag or family can lift here name what is
missing and why (docs/rl_games.md's table quotes them)."""

from __future__ import annotations

import pytest
from rl_games_yaml_support import load

from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import translate


@pytest.mark.parametrize(
    "name,field,why",
    [
        ("ma/ppo_connect4_self_play.yaml", "params.config.env_name", "registers no 'connect4_env'"),
        ("test/test_ppo_walker_truncated_time.yaml", "params.config.env_config.steps_limit", "TimeLimit"),
        ("test/test_asymmetric_discrete.yaml", "params.config.env_config.name", "TestAsymmetricCritic"),
    ],
)
def test_the_refusal_names_the_key_and_why(name, field, why):
    with pytest.raises(RlGamesKeyError) as e:
        translate(load(name), name)
    assert e.value.field == field and why in str(e.value)


def test_rl_games_itself_registers_no_connect4_env():
    from rl_games.common.env_configurations import configurations

    assert "connect4_env" not in configurations
