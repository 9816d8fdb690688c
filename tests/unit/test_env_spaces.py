"""`check_env_spaces`: what the engine refuses once the env's spaces are known, in plain words."""

import importlib.util

import gymnasium as gym
import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.envs.registry import make_env
from surge.envs.wrappers import ChannelsFirst
from surge.errors import ConfigError, EnvError
from surge.runtime.env_checks import check_env_spaces

Box, Discrete = gym.spaces.Box, gym.spaces.Discrete


def _cfg(tmp_path, *extra):
    """A config with the conv encoder (CartPole-v1's own spaces would choose an MLP)."""
    conv = ["--encoder_type=conv", "--encoder_subtype=convnet_simple"]
    return parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", *conv, *extra])


def _image(*shape):
    return Box(0, 255, shape, np.uint8)


def test_an_image_too_small_for_the_conv_encoder_is_refused_with_the_fix(tmp_path):
    with pytest.raises(EnvError) as e:
        check_env_spaces(_cfg(tmp_path), _image(3, 16, 16), Discrete(3))
    msg = str(e.value)
    assert "16x16" in msg and "convnet_simple" in msg and "--encoder_type=resnet" in msg
    check_env_spaces(_cfg(tmp_path, "--encoder_type=resnet"), _image(3, 16, 16), Discrete(3))
    check_env_spaces(_cfg(tmp_path), _image(3, 64, 64), Discrete(3))


def test_a_height_width_channel_image_is_detected_and_the_fix_works(tmp_path):
    with pytest.raises(EnvError) as e:
        check_env_spaces(_cfg(tmp_path), _image(7, 7, 3), Discrete(3))
    msg = str(e.value)
    assert "(7, 7, 3)" in msg and "height-width-channel" in msg
    assert "surge.envs.wrappers:ChannelsFirst" in msg and "--encoder_type=mlp" in msg
    check_env_spaces(_cfg(tmp_path, "--encoder_type=mlp"), _image(7, 7, 3), Discrete(3))
    with pytest.raises(EnvError, match="height-width-channel"):
        check_env_spaces(_cfg(tmp_path), _image(84, 84, 4), Discrete(3))
    check_env_spaces(_cfg(tmp_path), _image(4, 84, 84), Discrete(3))


def test_channels_first_wrapper_transposes_images_in_box_and_dict_observations():
    class Env(gym.Env):
        observation_space = gym.spaces.Dict({"image": _image(84, 84, 3), "vec": Box(-1, 1, (5,))})
        action_space = Discrete(2)

        def reset(self, *, seed=None, options=None):
            return {
                "image": np.arange(84 * 84 * 3, dtype=np.uint8).reshape(84, 84, 3),
                "vec": np.zeros(5),
            }, {}

    env = ChannelsFirst(Env())
    assert env.observation_space["image"].shape == (3, 84, 84) and env.observation_space["vec"].shape == (5,)
    obs, _ = env.reset()
    raw, _ = Env().reset()
    assert np.array_equal(obs["image"], raw["image"].transpose(2, 0, 1))
    assert env.observation_space["image"].contains(obs["image"])


def test_a_dict_observation_with_a_discrete_entry_names_the_key(tmp_path):
    space = gym.spaces.Dict({"image": _image(3, 64, 64), "direction": Discrete(4)})
    with pytest.raises(EnvError) as e:
        check_env_spaces(_cfg(tmp_path), space, Discrete(3))
    msg = str(e.value)
    assert "'direction'" in msg and "Discrete(4)" in msg and "FlattenObservation" in msg


def test_a_dict_action_space_is_refused(tmp_path):
    actions = gym.spaces.Dict({"move": Discrete(3), "fire": Discrete(2)})
    with pytest.raises(EnvError) as e:
        check_env_spaces(_cfg(tmp_path), Box(-1, 1, (4,)), actions)
    assert "action_space" in str(e.value) and "Dict" in str(e.value)


def test_observations_too_large_for_memory_are_refused(tmp_path, monkeypatch):
    import surge.runtime.memory_estimate

    monkeypatch.setattr(surge.runtime.memory_estimate, "physical_memory_bytes", lambda: 8 * 10**9)
    with pytest.raises(ConfigError) as e:
        check_env_spaces(_cfg(tmp_path), Box(-1, 1, (20_000_000,), np.float32), Discrete(3))
    assert "memory" in e.value.problem
    check_env_spaces(_cfg(tmp_path), Box(-1, 1, (4,), np.float32), Discrete(3))


@pytest.mark.skipif(importlib.util.find_spec("Box2D") is not None, reason="Box2D is installed")
def test_a_missing_optional_env_dependency_names_the_install(tmp_path):
    with pytest.raises(EnvError) as e:  # refused while parsing: the env is made once for its spaces
        make_env(parse_cfg(["--env=LunarLander-v3", f"--train_dir={tmp_path}"]))
    assert "LunarLander-v3" in str(e.value) and 'pip install "surge-rl[box2d]"' in str(e.value)


def test_entries_that_cannot_be_flattened_are_all_named(tmp_path):
    # gymnasium's FlattenObservation fails on a Graph and a Sequence: naming only a Discrete entry
    # (and advising FlattenObservation) would send the user into that failure
    space = gym.spaces.Dict(
        {
            "direction": Discrete(4),
            "graph": gym.spaces.Graph(Box(0, 1, (2,)), Discrete(3)),
            "inner": gym.spaces.Dict({"seq": gym.spaces.Sequence(Discrete(2)), "x": Box(-1, 1, (3,))}),
        }
    )
    with pytest.raises(EnvError) as e:
        check_env_spaces(_cfg(tmp_path), space, Discrete(3))
    msg = str(e.value)
    assert "observation_space['graph'] is Graph" in msg
    assert "observation_space['inner']['seq'] is Sequence" in msg
    assert "cannot be flattened" in msg and "surge.envs.wrappers:DropUnflattenable FlattenObservation" in msg


def test_a_space_with_nothing_flattenable_left_gets_no_wrapper_advice(tmp_path):
    space = gym.spaces.Dict({"graph": gym.spaces.Graph(Box(0, 1, (2,)), Discrete(3))})
    with pytest.raises(EnvError) as e:
        check_env_spaces(_cfg(tmp_path), space, Discrete(3))
    msg = str(e.value)
    assert "['graph']" in msg and "--encoder_custom" in msg and "--env_wrappers" not in msg


def test_drop_unflattenable_keeps_the_numeric_entries_at_any_depth():
    from surge.envs.wrappers import DropUnflattenable

    class Env(gym.Env):
        observation_space = gym.spaces.Dict(
            {
                "text": gym.spaces.Sequence(Discrete(5)),
                "inner": gym.spaces.Dict({"seq": gym.spaces.Sequence(Discrete(2)), "x": Box(-1, 1, (3,))}),
                "d": Discrete(4),
            }
        )
        action_space = Discrete(2)

        def reset(self, *, seed=None, options=None):
            return {"text": (1, 2), "inner": {"seq": (0,), "x": np.zeros(3, np.float32)}, "d": 2}, {}

    env = DropUnflattenable(Env())
    assert set(env.observation_space.spaces) == {"inner", "d"}
    assert set(env.observation_space["inner"].spaces) == {"x"}
    obs, _ = env.reset()
    assert obs == {"inner": {"x": obs["inner"]["x"]}, "d": 2} and env.observation_space.contains(obs)
    flat = gym.wrappers.FlattenObservation(env)  # what the fix puts after it
    assert flat.observation_space.shape == (3 + 4,)
