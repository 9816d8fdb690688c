"""rl_games' Brax files (configs/brax/*.yaml, `env_name: brax`) map to surge's brax_ family with
all of num_actors in one worker's batched env. Needs no brax: only the translation is checked."""

import pytest
from rl_games_yaml_support import future_fields, load

from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import translate


def _translate(name: str, **config):
    data = load(name)
    data["params"]["config"]["mixed_precision"] = False  # the mapping alone (bf16 or none: tested below)
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


@pytest.mark.parametrize("cuda", [False, True])
def test_shipped_brax_file_translates_whole_with_its_mixed_precision(monkeypatch, cuda):
    """brax/ppo_ant.yaml as shipped: the env maps to brax_ant, and `mixed_precision: True` to what
    rl_games 1.6.5 runs: bf16 with CUDA (`autocast('cuda', dtype=torch.bfloat16)` around its PPO
    losses), float32 without (that autocast and `GradScaler('cuda')` do nothing on CPU tensors)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    v = translate(
        load("brax/ppo_ant.yaml"), "brax/ppo_ant.yaml", fields=future_fields(), separate_ok=True
    ).values
    # bf16 where the run's device is CUDA, float32 elsewhere, whatever this machine has
    assert v["env"] == "brax_ant" and v["mixed_precision"] == "bf16_cuda"


def test_rl_games_runs_its_mixed_precision_in_bf16_under_cuda_autocast():
    """The reference for the translation above: rl_games 1.6.5's own code autocasts its PPO
    losses to bfloat16 on CUDA (read from the installed package, not restated)."""
    import inspect

    a2c_continuous = pytest.importorskip("rl_games.algos_torch.a2c_continuous")
    a2c_discrete = pytest.importorskip("rl_games.algos_torch.a2c_discrete")
    for mod in (a2c_continuous, a2c_discrete):
        src = inspect.getsource(mod)
        assert "autocast('cuda', enabled=self.mixed_precision, dtype=torch.bfloat16)" in src, mod.__name__
