"""What an rl_games file asks that surge cannot honour is refused with the key's full path, before
any process starts; keys whose surge flag is not merged yet are refused naming that flag."""

from __future__ import annotations

import copy
import re

import pytest
from rl_games_yaml_support import future_fields, load

from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import surge_fields, translate

#: the Done-when files of issue 21
DONE_WHEN = [
    "ppo_cartpole.yaml",
    "ppo_lunar.yaml",
    "ppo_lunar_discrete.yaml",
    "ppo_lunar_continiuos_torch.yaml",
    "ppo_pendulum.yaml",
    "ppo_pendulum_torch.yaml",
    "atari/ppo_pong.yaml",
    "atari/ppo_pong_envpool.yaml",
    "mujoco/halfcheetah.yaml",
    "mujoco/halfcheetah_envpool.yaml",
]

#: the flags of issue 21's other parts that these files need
AGREED = {
    "actor_critic_share_weights",
    "lr_schedule",
    "lr_schedule_kl_threshold",
    "score_to_win",
    "value_bootstrap",
    "mu_activation",
    "bounds_loss_coef",
    "reward_shift",
    "d2rl",
    "value_size",
    "rnn_before_mlp",
    "rnn_layer_norm",
    "zero_rnn_on_done",
}


@pytest.mark.parametrize("name", DONE_WHEN)
def test_done_when_files_translate_or_name_the_missing_flag(name):
    """With this build's flags: the file translates, or the refusal names a flag of issue 21 that
    is not merged yet (and the file translates once it is: `future_fields`)."""
    try:
        translate(load(name), name)
    except RlGamesKeyError as e:
        flags = set(re.findall(r"--(\w+)", str(e)))
        assert flags & AGREED, str(e)
        missing = (flags & AGREED) - set(surge_fields(False))
        # either the flag is missing, or its value is not among the flag's choices yet / refused by the model
        assert missing or "does not accept" in str(e) or "refused by this surge's model" in str(e), str(e)
    translate(load(name), name, fields=future_fields(), separate_ok=True)


def _cartpole():
    return copy.deepcopy(load("ppo_cartpole.yaml"))


@pytest.mark.parametrize(
    "where,key,value",
    [
        (("config",), "some_new_key", 1),
        (("network", "mlp"), "dropout", 0.1),
        (("config", "reward_shaper"), "gamma", 0.9),
        ((), "experiment_config1", None),
    ],
)
def test_unknown_keys_refused_with_their_path(where, key, value):
    data = _cartpole()
    node = data["params"] if where or key != "experiment_config1" else data
    for w in where:
        node = node[w]
    node[key] = value
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "f.yaml", fields=future_fields(), separate_ok=True)
    expected = ".".join(("params", *where, key)) if where else key
    assert e.value.field == expected
    assert expected in str(e.value) and "f.yaml" in str(e.value)


def test_central_value_rnn_layer_norm_refused_with_full_path():
    data = _cartpole()
    data["params"]["network"]["separate"] = False
    data["params"]["network"]["rnn"] = {"name": "lstm", "units": 64, "layers": 1}
    data["params"]["config"]["central_value_config"] = {
        "minibatch_size": 64,
        "mini_epochs": 4,
        "learning_rate": 5e-4,
        "clip_value": False,
        "normalize_input": True,
        "network": {
            "name": "actor_critic",
            "central_value": True,
            "mlp": {"units": [64], "activation": "relu", "initializer": {"name": "default"}},
            "rnn": {"name": "lstm", "units": 64, "layers": 1, "layer_norm": True},
        },
    }
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "f.yaml", fields=future_fields(), separate_ok=True)
    assert e.value.field == "params.config.central_value_config.network.rnn.layer_norm"
    data["params"]["config"]["central_value_config"]["network"]["rnn"]["layer_norm"] = False
    v = translate(data, "f.yaml", fields=future_fields(), separate_ok=True).values
    assert v["central_value"] is True and v["central_value_mlp_layers"] == [64]
    assert v["central_value_use_rnn"] is True and v["central_value_clip_value"] is False
    assert v["central_value_minibatch_size"] == 64 and v["central_value_learning_rate"] == 5e-4


@pytest.mark.parametrize(
    "path,value,field",
    [
        (("config", "multi_gpu"), True, "params.config.multi_gpu"),
        (("load_checkpoint",), True, "params.load_checkpoint"),
        (("network", "name"), "resnet_actor_critic", "params.network.name"),
        (("algo", "name"), "sac", "params.algo.name"),
        (("config", "env_name"), "cule", "params.config.env_name"),
        (("config", "env_name"), "smac", "params.config.env_name"),
        (("network", "mlp", "activation"), "sigmoid", "params.network.mlp.activation"),
        (("config", "minibatch_size"), 60, "params.config.minibatch_size"),
    ],
)
def test_unsupported_values_refused(path, value, field):
    data = _cartpole()
    node = data["params"]
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "f.yaml", fields=future_fields(), separate_ok=True)
    assert e.value.field == field


def test_missing_flag_named_and_neutral_value_accepted():
    """bounds_loss_coef 0 needs no flag (surge has no bounds loss); 0.001 needs --bounds_loss_coef."""
    fields = _without(future_fields(), "bounds_loss_coef")
    data = _cartpole()
    data["params"]["config"]["bounds_loss_coef"] = 0
    out = translate(data, "f.yaml", fields=fields, separate_ok=True)
    assert "bounds_loss_coef" not in out.values
    data["params"]["config"]["bounds_loss_coef"] = 0.001
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "f.yaml", fields=fields, separate_ok=True)
    assert e.value.field == "params.config.bounds_loss_coef" and "--bounds_loss_coef" in str(e.value)


def _without(fields, name):
    return {k: v for k, v in fields.items() if k != name}


def test_every_shipped_file_translates_or_is_refused_by_name():
    """No shipped file crashes the translator: each translates, or is refused with an rl_games key."""
    from rl_games_yaml_support import CONFIGS

    from surge.app.rl_games.translation import is_rl_games_yaml
    from surge.cfg.yaml_files import read_yaml

    for path in sorted(CONFIGS.rglob("*.yaml")):
        data = read_yaml(str(path))
        if not is_rl_games_yaml(data):
            continue
        try:
            translate(data, str(path), fields=future_fields(), separate_ok=True)
        except RlGamesKeyError as e:
            assert e.field.startswith("params") or e.field in data, (path, e)


def test_docs_table_script_classifies_files():
    """benchmarks/rl_games_configs.py, which writes docs/rl_games.md's table."""
    import importlib.util
    from pathlib import Path

    from rl_games_yaml_support import CONFIGS

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "rl_games_configs.py"
    spec = importlib.util.spec_from_file_location("rl_games_configs", script)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    result, what, why = mod.classify(CONFIGS / "smac" / "v1" / "3m_torch.yaml")
    assert (result, what) == ("refused", "`params.config.env_name`") and "StarCraft" in why
    result, what, why = mod.classify(CONFIGS / "ppo_cartpole.yaml")
    assert what == "`CartPole-v1`" and result in ("translates", "waits for issue 21")
    if result == "waits for issue 21":
        assert "--" in why
    assert (
        mod.classify(CONFIGS / "smac" / "v2" / "env_configs" / "sc2_gen_zerg.yaml")[0]
        == "not a training file"
    )


def _cartpole_with_cv(**block):
    data = _cartpole()
    data["params"]["network"]["separate"] = False
    data["params"]["config"]["central_value_config"] = {
        "network": {
            "name": "actor_critic",
            "central_value": True,
            "mlp": {"units": [64], "activation": "relu"},
        },
        **block,
    }
    return data


def test_central_value_clip_and_schedule_that_surge_would_change_are_refused():
    """rl_games' CentralValueTrain clips with its block's e_clip (default 0.2) and follows its
    block's lr_schedule (central_value.py); surge's central value uses --ppo_clip_value and
    --lr_schedule: where they would differ the file is refused, naming the block's key."""
    data = _cartpole_with_cv(clip_value=True)  # ppo_cartpole: clip_value True, e_clip 0.2: same
    v = translate(data, "f.yaml", fields=future_fields(), separate_ok=True).values
    assert v["central_value_clip_value"] is True and v["ppo_clip_value"] == 0.2
    data["params"]["config"]["clip_value"] = False  # the policy's values unclipped, the block's clipped
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "f.yaml", fields=future_fields(), separate_ok=True)
    assert e.value.field == "params.config.central_value_config.clip_value"
    data = _cartpole_with_cv(clip_value=True, lr_schedule="linear")  # the top level is constant
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "f.yaml", fields=future_fields(), separate_ok=True)
    assert e.value.field == "params.config.central_value_config.lr_schedule"


def test_a_model_rl_games_does_not_register_is_refused_as_such():
    """ppo_continuous_lstm.yaml names `continuous_a2c_lstm_logstd`, which rl_games 1.6.5's own
    ModelBuilder cannot make; the translation's list is its registry."""
    from rl_games.algos_torch.model_builder import ModelBuilder

    from surge.app.rl_games.translation import RL_GAMES_MODELS

    assert sorted(RL_GAMES_MODELS) == sorted(ModelBuilder().model_factory._builders)
    with pytest.raises(RlGamesKeyError, match="not a model rl_games 1.6.5 registers") as e:
        translate(load("ppo_continuous_lstm.yaml"), "ppo_continuous_lstm.yaml")
    assert e.value.field == "params.model.name"
