"""Action masks: where surge finds them, and how the observation space is split around them.

Inside surge an env with a mask presents it as the observation dict key `action_mask` (PettingZoo
classic's and gymnasium's convention): one 0/1 (or bool) entry per action logit, 1 = legal, i.e.
`[n]` for `Discrete(n)` and the heads' masks concatenated, `[sum(nvec)]`, for `MultiDiscrete(nvec)`.
Two other sources are moved there by a wrapper:

- `info["action_mask"]` of `reset`/`step` (gymnasium's toy-text envs, many custom envs):
  `--env_wrappers=surge.envs.action_masks:InfoActionMask`;
- rl_games' env API, `has_action_mask()` / `get_action_mask()` (rl_games/common/vecenv.py,
  read by a2c_common.py's `get_action_masks`): every env surge makes
  (`surge.envs.registry.make_single_env`, outside `--env_wrappers`) and `SingleAgentAsMultiAgent`
  wrap such an env in `RlGamesActionMask` by themselves (`wrap_rl_games_mask`).

The trajectory buffers store the mask as the bool entry `obs["action_mask"]` `[S, T+1, num_logits]`
(carried to the next trajectory with the bootstrap observation, as the other observations are);
the model strips it before the encoder (`model_obs_space`, `split_obs`) and masks its logits with it
(`surge.models.distributions.apply_action_mask`). Envs without a mask store and pay nothing.
"""

from __future__ import annotations

from typing import Any, TypeGuard, cast

import gymnasium as gym
import numpy as np

from surge.errors import EnvError

MASK_KEY = "action_mask"


def has_action_mask(space: gym.Space) -> TypeGuard[gym.spaces.Dict]:
    """True when the observation space is a Dict with an `action_mask` entry."""
    return isinstance(space, gym.spaces.Dict) and MASK_KEY in space.spaces


def mask_width(action_space: gym.Space) -> int:
    """Entries of a mask for `action_space`: n for `Discrete(n)`, sum(nvec) for `MultiDiscrete`.

    Raises:
        EnvError: masks are not supported for this action space (Box, Tuple, ...).
    """
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return int(np.asarray(action_space.nvec).sum())
    raise EnvError(
        f"action masks are supported for Discrete and MultiDiscrete actions, not {action_space}; "
        "remove the observation's 'action_mask' entry"
    )


def mask_space(action_space: gym.Space) -> gym.spaces.Box:
    """The observation-space entry of a mask for `action_space`: `Box(0, 1, (width,), int8)`."""
    return gym.spaces.Box(0, 1, (mask_width(action_space),), np.int8)


def unwrapped_key(space: gym.Space) -> str | None:
    """With a mask: the one other key of the Dict (PettingZoo's `observation`), whose value is then
    the model's observation itself; None when the Dict holds several other keys (or no mask)."""
    if not has_action_mask(space):
        return None
    rest = [k for k in space.spaces if k != MASK_KEY]
    return rest[0] if len(rest) == 1 else None


def model_obs_space(space: gym.Space) -> gym.Space:
    """The observation space the encoder sees: `space` without its `action_mask` entry (the single
    remaining entry itself when only one is left); `space` unchanged when it has no mask."""
    if not has_action_mask(space):
        return space
    key = unwrapped_key(space)
    if key is not None:
        return space.spaces[key]
    return gym.spaces.Dict({k: s for k, s in space.spaces.items() if k != MASK_KEY})


def check_mask_space(space: gym.Space, action_space: gym.Space) -> None:
    """Refuses a mask entry whose width is not the action space's number of logits.

    Raises:
        EnvError: wrong shape, or an action space masks are not supported for.
    """
    if not has_action_mask(space):
        return
    width = mask_width(action_space)
    shape = tuple(space.spaces[MASK_KEY].shape or ())  # None: a space without a shape
    if shape != (width,):
        raise EnvError(
            f"observation['action_mask'] has shape {shape}; for actions {action_space} it must be "
            f"({width},): one entry per action (per head's action, concatenated, for MultiDiscrete), 1 = legal"
        )


def split_obs(obs: Any, key: str | None) -> tuple[Any, Any]:
    """`(model_obs, mask)` of a dict observation (numpy arrays or tensors, any leading dims): the
    mask entry taken out, the single `key` unwrapped when not None (see `unwrapped_key`)."""
    mask = obs[MASK_KEY]
    if key is not None:
        return obs[key], mask
    return {k: v for k, v in obs.items() if k != MASK_KEY}, mask


def sample_legal(action_space: gym.Space, mask: Any) -> Any:
    """One uniformly random legal action (the decorrelation steps', `surge enjoy --random`); `mask`
    `[width]` 0/1, or None for any action. A mask without a legal entry (an agent whose turn it is
    not) allows every action."""
    if mask is None:
        return action_space.sample()
    m = np.asarray(mask).astype(np.int8, copy=False).reshape(-1)
    if isinstance(action_space, gym.spaces.Discrete):
        return action_space.sample(mask=m if m.any() else None)
    multi = cast(gym.spaces.MultiDiscrete, action_space)  # the other space masks exist for (mask_width)
    sizes = [int(n) for n in np.asarray(multi.nvec).reshape(-1)]
    heads = np.split(m, np.cumsum(sizes)[:-1])
    masks = tuple(h if h.any() else np.ones_like(h) for h in heads)
    return multi.sample(mask=masks).reshape(np.asarray(multi.nvec).shape)


def is_legal(action_space: gym.Space, mask: Any, action: Any) -> bool:
    """Whether `action` is allowed by `mask` `[width]` (0/1 or bool); a head whose mask has no
    legal entry allows every action (`sample_legal`)."""
    m = np.asarray(mask).reshape(-1) != 0
    if isinstance(action_space, gym.spaces.Discrete):
        return bool(not m.any() or m[int(action) - int(action_space.start)])
    multi = cast(gym.spaces.MultiDiscrete, action_space)  # the other space masks exist for (mask_width)
    sizes = [int(n) for n in np.asarray(multi.nvec).reshape(-1)]
    heads = np.split(m, np.cumsum(sizes)[:-1])
    return all(not h.any() or h[int(a)] for h, a in zip(heads, np.asarray(action).reshape(-1), strict=True))


def _as_mask(value: Any, width: int) -> np.ndarray:
    m = np.asarray(value).astype(np.int8).reshape(-1)
    if m.shape != (width,):
        raise EnvError(f"action mask has shape {np.shape(value)}, expected ({width},)")
    return m


class _MaskInObs(gym.Wrapper):
    """Base of the wrappers that move a mask into `observation['action_mask']`."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        if has_action_mask(env.observation_space):
            raise EnvError("the env's observations already hold 'action_mask'; no mask wrapper is needed")
        self.width = mask_width(env.action_space)
        self.observation_space = gym.spaces.Dict(
            {"observation": env.observation_space, MASK_KEY: mask_space(env.action_space)}
        )

    def _mask(self, info: dict) -> np.ndarray:
        raise NotImplementedError

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return {"observation": obs, MASK_KEY: self._mask(info)}, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return {"observation": obs, MASK_KEY: self._mask(info)}, reward, terminated, truncated, info


class InfoActionMask(_MaskInObs):
    """Moves `info["action_mask"]` (1 = legal) into the observation dict (gymnasium's toy-text
    convention, e.g. Taxi-v3); a step without one allows every action.

    Raises:
        EnvError: the action space is neither Discrete nor MultiDiscrete, or a mask has the wrong width.
    """

    def _mask(self, info: dict) -> np.ndarray:
        if MASK_KEY not in info:
            return np.ones(self.width, np.int8)
        return _as_mask(info[MASK_KEY], self.width)


class RlGamesActionMask(_MaskInObs):
    """rl_games' env API: `get_action_mask()` after each reset and step, into the observation dict."""

    def _mask(self, info: dict) -> np.ndarray:
        return _as_mask(_rl_games_env(self.env).get_action_mask(), self.width)


def _rl_games_env(env: Any) -> Any:
    return env if callable(getattr(env, "has_action_mask", None)) else getattr(env, "unwrapped", env)


def uses_rl_games_mask(env: Any) -> bool:
    """True for an env of rl_games' API that says it has action masks (`has_action_mask()`)."""
    has = getattr(_rl_games_env(env), "has_action_mask", None)
    return callable(has) and bool(has())


def wrap_rl_games_mask(env: Any) -> Any:
    """`env` in `RlGamesActionMask` when it follows rl_games' mask API (`uses_rl_games_mask`) and
    its observations do not hold an `action_mask` entry yet (so wrapping twice is a no-op); else
    `env` itself.

    Raises:
        EnvError: a masked env whose action space is neither Discrete nor MultiDiscrete.
    """
    if uses_rl_games_mask(env) and not has_action_mask(env.observation_space):
        return RlGamesActionMask(env)
    return env
