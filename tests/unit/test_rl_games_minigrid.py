"""rl_games' `minigrid/` files as surge runs them: `minigrid_env` (`create_minigrid_env`: the agent's
view of `view_size` cells as about 84x84 pixels) as `minigrid:<task>` with a view of
`surge.envs.minigrid_views`, checked against minigrid's env built with that view size."""

from __future__ import annotations

import gymnasium as gym
import minigrid  # noqa: F401  (registers the MiniGrid ids)
import numpy as np
import pytest
from minigrid.wrappers import ImgObsWrapper, RGBImgPartialObsWrapper
from rl_games_yaml_support import load

from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import translate
from surge.envs.minigrid_views import PixelView3, PixelView5


@pytest.mark.parametrize(
    "name, task, view",
    [
        ("minigrid/lava_rnn_img.yaml", "MiniGrid-LavaCrossingS11N5-v0", 3),
        ("minigrid/minigrid_rnn_img.yaml", "MiniGrid-MemoryS13Random-v0", 5),
    ],
)
def test_the_files_translate_to_the_task_with_its_view(name, task, view):
    v = translate(load(name), name).values
    assert v["env"] == f"minigrid:{task}"
    assert v["env_wrappers"] == [
        f"surge.envs.minigrid_views:PixelView{view}",
        "surge.envs.wrappers:ChannelsFirst",
    ]
    # the file's cnn (32-8-4, 64-4-2, 64-3-1) and lstm 256 after it, mlp units []
    assert (v["encoder_subtype"], v["encoder_extra_fc_layers"]) == ("convnet_deepmind", 0)
    assert (v["use_rnn"], v["rnn_type"], v["hidden_size"]) == (True, "lstm", 256)


@pytest.mark.parametrize("wrapper, view, pixels", [(PixelView3, 3, 84), (PixelView5, 5, 80)])
def test_the_view_is_minigrids_env_with_that_view_size(wrapper, view, pixels):
    task = "MiniGrid-LavaCrossingS11N5-v0"
    ours = wrapper(gym.make(task))
    # the reference: the env made with agent_view_size, as gym_minigrid's ViewSizeWrapper left it
    ref = ImgObsWrapper(RGBImgPartialObsWrapper(gym.make(task, agent_view_size=view), tile_size=84 // view))
    assert ours.observation_space.shape == ref.observation_space.shape == (pixels, pixels, 3)
    a, _ = ours.reset(seed=5)
    b, _ = ref.reset(seed=5)
    np.testing.assert_array_equal(a, b)
    for action in (2, 1, 2, 0, 2, 2):
        a, ra, *_ = ours.step(action)
        b, rb, *_ = ref.step(action)
        np.testing.assert_array_equal(a, b)
        assert ra == rb
        assert a.shape == (pixels, pixels, 3) and a.dtype == np.uint8


def test_a_view_size_without_a_class_is_refused_by_its_key():
    data = load("minigrid/lava_rnn_img.yaml")
    data["params"]["config"]["env_config"]["view_size"] = 9
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "x.yaml")
    assert e.value.field == "params.config.env_config.view_size"
