"""rl_games' `TestRnnEnv-v0` (`rl_games/envs/test/rnn_env.py`) as surge's `rl_games_test_rnn`,
against rl_games' class stepped directly, and rl_games' `test/*.yaml` files that use it."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from rl_games.envs.test import rnn_env
from rl_games_yaml_support import CONFIGS, load

from surge.app.resolve import parse_cfg
from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import translate
from surge.envs.registry import find_family, make_single_env
from surge.errors import ConfigError


def _env(tmp_path, *args):
    cfg = parse_cfg(["--env=rl_games_test_rnn", f"--train_dir={tmp_path}", *args])
    return make_single_env(find_family(cfg.env), cfg.env, cfg)


@pytest.mark.parametrize("hide", [False, True])
def test_episodes_are_rl_games_own(tmp_path, hide):
    env = _env(tmp_path, f"--rnn_env_hide_object={hide}", "--rnn_env_apply_dist_reward=True")
    ref = rnn_env.TestRNNEnv(hide_object=hide, apply_dist_reward=True)
    assert env.observation_space.shape == ref.observation_space.shape == (6,)
    assert env.observation_space.dtype == np.float32 and env.action_space == gym.spaces.Discrete(4)
    rng = np.random.default_rng(1)
    for episode in range(3):
        obs, _ = env.reset(seed=10 + episode)
        np.random.seed(10 + episode)
        np.testing.assert_array_equal(obs, ref.reset())
        for _ in range(30):
            a = int(rng.integers(4))
            obs, rew, term, trunc, _ = env.step(a)
            ref_obs, ref_rew, ref_done, _ = ref.step(a)
            np.testing.assert_array_equal(obs, ref_obs)
            assert rew == float(ref_rew) and term == ref_done and trunc is False
            if hide:
                assert (obs[2:4] == 0).all()  # the goal is shown at the reset only
            if term:
                break
        assert term  # at the goal or at max_steps (21)


def test_tuple_actions_and_the_central_value_state(tmp_path):
    env = _env(tmp_path, "--rnn_env_multi_discrete_space=True", "--rnn_env_use_central_value=True")
    assert env.action_space == gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Discrete(3)])
    assert isinstance(env.observation_space, gym.spaces.Dict) and set(env.observation_space) == {
        "obs",
        "state",
    }
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    obs, *_ = env.step((1, 2))
    assert set(obs) == {"obs", "state"} and obs["state"].shape == (6,)


def test_bad_distances_are_refused(tmp_path):
    with pytest.raises(ConfigError) as e:
        _env(tmp_path, "--rnn_env_min_dist=5", "--rnn_env_max_dist=3")
    assert e.value.field == "rnn_env_min_dist"


@pytest.mark.parametrize(
    "name,flags",
    [
        ("test_rnn.yaml", {"rnn_env_hide_object": True, "rnn_env_use_central_value": False}),
        ("test_discrete.yaml", {"rnn_env_apply_dist_reward": True, "rnn_env_use_central_value": True}),
        ("test_discrete_multidiscrete_mhv.yaml", {"rnn_env_multi_discrete_space": True}),
    ],
)
def test_the_files_translate(name, flags):
    v = translate(load(f"test/{name}"), name).values
    assert v["env"] == "rl_games_test_rnn"
    assert {k: v[k] for k in flags} == flags
    assert (v["rnn_env_min_dist"], v["rnn_env_max_dist"]) == (2, 8)


@pytest.mark.parametrize("key", ["multi_head_value", "multi_obs_space", "aux_loss"])
def test_what_surge_has_not_got_is_refused_by_key(key):
    data = copy.deepcopy(load("test/test_rnn.yaml"))
    data["params"]["config"]["env_config"][key] = True
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "f.yaml")
    assert e.value.field == f"params.config.env_config.{key}"


def test_the_asymmetric_env_is_refused():
    with pytest.raises(RlGamesKeyError) as e:
        translate(load("test/test_asymmetric_discrete.yaml"), "f.yaml")
    assert e.value.field == "params.config.env_config.name"


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["test_rnn.yaml", "test_discrete.yaml", "test_discrete_multidiscrete_mhv.yaml"]
)
def test_the_files_train_a_little(tmp_path, name):
    from surge.app.training_run import TrainingRun

    cfg = parse_cfg(
        [
            f"--cfg={CONFIGS / 'test' / name}",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--train_for_env_steps=10000",
            "--num_torch_threads=1",
        ]
    )
    run = TrainingRun(cfg)
    assert run.run() == "done" and run.monitor.episodes > 100  # episodes of at most 21 steps
