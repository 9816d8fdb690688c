"""MiniGrid seen as rl_games' `minigrid_env` sees it (`create_minigrid_env`,
`rl_games/common/env_configurations.py`): the agent's partial view of `view_size` cells rendered as
an RGB image of about 84x84 pixels (`ViewSizeWrapper(view_size)`, then
`RGBImgPartialObsWrapper(tile_size=84 // view_size)`), or the whole grid as pixels
(`RGBImgObsWrapper`), then only the image (`ImgObsWrapper`: the mission text dropped).

`--env_wrappers` take classes without arguments, so each view size is a class of its own:
`--env=minigrid:MiniGrid-LavaCrossingS11N5-v0 --env_wrappers surge.envs.minigrid_views:PixelView3`.
minigrid is imported when a view is built, so this module loads without it.
"""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np

#: the partial view sizes with a class here (`PixelView<N>`): rl_games' default 3, its files' 5,
#: and minigrid's own 7
VIEW_SIZES = (3, 5, 7)


class PixelView(gym.Wrapper):
    """The agent's view of `view_size` x `view_size` cells as an RGB image `[H, W, 3]` uint8 with
    `84 // view_size` pixels per cell (84x84 for 3 and 7, 80x80 for 5), nothing else.

    Raises:
        ValueError: a view size that is not an odd number >= 3 (minigrid's rule).
    """

    view_size: ClassVar[int] = 7

    def __init__(self, env: gym.Env):
        from minigrid.wrappers import ImgObsWrapper, RGBImgPartialObsWrapper, ViewSizeWrapper

        v = self.view_size
        if v < 3 or v % 2 == 0:
            raise ValueError(f"a MiniGrid view is an odd number of cells >= 3, got {v}")
        # gym_minigrid's ViewSizeWrapper (rl_games' dependency) set the env's own view size, which
        # the pixel rendering reads; minigrid 3's crops only the symbolic image, so it is set here
        base = env.unwrapped
        base.agent_view_size = v  # type: ignore[attr-defined]
        spaces = dict(base.observation_space.spaces)  # type: ignore[attr-defined]
        spaces["image"] = gym.spaces.Box(0, 255, (v, v, 3), np.uint8)
        base.observation_space = gym.spaces.Dict(spaces)
        super().__init__(ImgObsWrapper(RGBImgPartialObsWrapper(ViewSizeWrapper(env, v), tile_size=84 // v)))


class PixelView3(PixelView):
    """rl_games' minigrid_env default (view_size 3): 84x84 pixels."""

    view_size = 3


class PixelView5(PixelView):
    """view_size 5 (rl_games' minigrid/minigrid_rnn_img.yaml): 80x80 pixels."""

    view_size = 5


class PixelView7(PixelView):
    """view_size 7, minigrid's own view: 84x84 pixels."""

    view_size = 7


class FullPixelView(gym.Wrapper):
    """The whole grid as an RGB image, 8 pixels per cell (rl_games' `rgb_fully_obs: True`)."""

    def __init__(self, env: gym.Env):
        from minigrid.wrappers import ImgObsWrapper, RGBImgObsWrapper

        super().__init__(ImgObsWrapper(RGBImgObsWrapper(env)))


class SymbolicView(gym.Wrapper):
    """minigrid's own 7x7x3 symbolic view, nothing else (rl_games' `rgb_partial_obs: False`)."""

    def __init__(self, env: gym.Env):
        from minigrid.wrappers import ImgObsWrapper

        super().__init__(ImgObsWrapper(env))
