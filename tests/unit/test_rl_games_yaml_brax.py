"""rl_games' Brax files (configs/brax/*.yaml, `env_name: brax`) map to surge's brax_ family with
all of num_actors in one worker's batched env. Needs no brax: only the translation is checked."""

import pytest
from rl_games_yaml_support import future_fields, load

from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import translate


def _translate(name: str, **config):
    data = load(name)
    data["params"]["config"]["mixed_precision"] = False  # refused on its own (no mixed precision flag)
    data["params"]["config"].update(config)
    return translate(data, name, fields=future_fields(), separate_ok=True)


@pytest.mark.parametrize(
    "name,env,actors",
    # env_config.env_name and num_actors as written in rl_games 1.6.5's files
    [
        ("brax/ppo_ant.yaml", "brax_ant", 4096),
        ("brax/ppo_humanoid.yaml", "brax_humanoid", 4096),
        ("brax/ppo_halfcheetah.yaml", "brax_halfcheetah", 8192),
    ],
)
def test_brax_files_map_to_the_brax_family(name, env, actors):
    v = _translate(name).values
    assert v["env"] == env
    assert (v["num_workers"], v["num_envs_per_worker"], v["env_agents"]) == (1, 1, actors)
    # rl_games' batch: horizon_length x num_actors samples per iteration
    raw = load(name)["params"]["config"]
    assert v["rollout"] * v["env_agents"] == raw["horizon_length"] * raw["num_actors"]


def test_brax_env_name_defaults_to_ant_as_rl_games():
    data = load("brax/ppo_ant.yaml")
    data["params"]["config"]["mixed_precision"] = False
    del data["params"]["config"]["env_config"]  # rl_games' BraxEnv: kwargs.pop('env_name', 'ant')
    assert translate(data, "f.yaml", fields=future_fields(), separate_ok=True).values["env"] == "brax_ant"


def test_brax_env_missing_from_brax_is_refused_with_its_key():
    with pytest.raises(RlGamesKeyError) as e:
        _translate("brax/ppo_grasp.yaml")  # grasp is not in brax 0.14's registry
    assert e.value.field == "params.config.env_config.env_name"


def test_shipped_brax_file_translates_whole_with_its_mixed_precision():
    """brax/ppo_ant.yaml as shipped: the env maps to brax_ant and `mixed_precision: True` to fp16
    (rl_games' GradScaler precision), which a CPU run then refuses naming the fix (docs/mixed_precision.md)."""
    v = translate(
        load("brax/ppo_ant.yaml"), "brax/ppo_ant.yaml", fields=future_fields(), separate_ok=True
    ).values
    assert v["env"] == "brax_ant" and v["mixed_precision"] == "fp16"
