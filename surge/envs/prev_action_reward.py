"""`--use_prev_action_reward`: each env's previous action and reward beside its observation
(rlpyt's agent inputs `(observation, prev_action, prev_reward)`, Stooke & Abbeel 2019).

`PrevActionReward` wraps one single-agent gymnasium env; its observation is a Dict:

==============  ===========================  ===========================================
entry           shape, dtype                 value
==============  ===========================  ===========================================
`obs`           the env's observation        a Box observation (a Dict's entries stay
                                             at the top level instead)
`prev_action`   `[A]` float32                the action of the previous step: one-hot of
                                             the n actions for Discrete (A = n), the vector
                                             the env received for Box (A = its size)
`prev_reward`   `[1]` float32                the env's reward of the previous step (raw:
                                             before surge's scaling, clipping, shaping)
==============  ===========================  ===========================================

Both are zero at an episode's start (after `reset`, which surge calls after terminated or
truncated). rlpyt's "no previous action" is action 0's one-hot; here it is the zero vector, so a
start is told apart from action 0. The wrapper keeps the two per env, so the rollout stores them
in the trajectory buffers with the observation (`obs` entries, `[S, T+1, ...]`) and the learner,
replay and `surge export` see what acting saw; the model takes them apart again
(`surge.models.prev_inputs`). Without the flag no env is wrapped and no step pays for it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from surge.errors import ConfigError

OBS_KEY = "obs"
PREV_ACTION_KEY = "prev_action"
PREV_REWARD_KEY = "prev_reward"
PREV_KEYS = (PREV_ACTION_KEY, PREV_REWARD_KEY)
FLAG = "use_prev_action_reward"


def prev_action_width(action_space: gym.Space) -> int:
    """A: the width of `prev_action` for `action_space` (n for Discrete(n), the size of a Box).

    Raises:
        ConfigError: another action space (MultiDiscrete, Tuple, ...), naming the flag.
    """
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.Box):
        return int(np.prod(action_space.shape))
    raise ConfigError(
        FLAG,
        f"takes the previous action of a Discrete or Box action space (one-hot or the vector); "
        f"the env's is {action_space}.",
        "pass --use_prev_action_reward=False.",
    )


def with_prev_spaces(obs_space: gym.Space, action_space: gym.Space) -> gym.spaces.Dict:
    """The wrapped observation space (see the module docstring).

    Raises:
        ConfigError: an action space `prev_action_width` refuses; an observation that is neither a
            Box nor a Dict, or a Dict that already has an entry named `prev_action` or `prev_reward`.
    """
    width = prev_action_width(action_space)
    if isinstance(obs_space, gym.spaces.Box):
        entries: dict[str, gym.Space] = {OBS_KEY: obs_space}
    elif isinstance(obs_space, gym.spaces.Dict) and not set(PREV_KEYS) & set(obs_space.spaces):
        entries = dict(obs_space.spaces)
    else:
        raise ConfigError(
            FLAG,
            f"adds entries {PREV_KEYS} to a Box or Dict observation; the env's is {obs_space}.",
            "pass --use_prev_action_reward=False, or rename the env's entries.",
        )
    entries[PREV_ACTION_KEY] = gym.spaces.Box(-np.inf, np.inf, (width,), np.float32)
    entries[PREV_REWARD_KEY] = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    return gym.spaces.Dict(entries)


class PrevActionReward(gym.Wrapper):
    """One env's observation with its previous action and reward (see the module docstring).

    Raises:
        ConfigError: at construction, the spaces `with_prev_spaces` refuses.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = with_prev_spaces(env.observation_space, env.action_space)
        self._discrete = isinstance(env.action_space, gym.spaces.Discrete)
        width = prev_action_width(env.action_space)
        self._box_obs = isinstance(env.observation_space, gym.spaces.Box)
        self._zero_action = np.zeros(width, np.float32)
        self._zero_reward = np.zeros(1, np.float32)

    def _obs(self, obs: Any, prev_action: np.ndarray, prev_reward: np.ndarray) -> dict[str, Any]:
        out = {OBS_KEY: obs} if self._box_obs else dict(obs)
        out[PREV_ACTION_KEY] = prev_action
        out[PREV_REWARD_KEY] = prev_reward
        return out

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict]:
        obs, info = self.env.reset(**kwargs)
        return self._obs(obs, self._zero_action, self._zero_reward), info

    def step(self, action: Any) -> tuple[dict[str, Any], Any, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._discrete:
            prev_action = np.zeros_like(self._zero_action)
            prev_action[int(action)] = 1.0
        else:
            prev_action = np.asarray(action, np.float32).reshape(-1)
        r = float(reward)
        # a non-finite reward is not trained on (the rollout replaces it by 0); nor is it an input
        prev_reward = np.array([r if np.isfinite(r) else 0.0], np.float32)
        return self._obs(obs, prev_action, prev_reward), reward, terminated, truncated, info


def wrap_prev_action_reward(env: Any, cfg: Any) -> Any:
    """`env` in `PrevActionReward` when `cfg.use_prev_action_reward` (a config, or the namespace
    of a space probe, which may lack the field: then unwrapped).

    Raises:
        ConfigError: the env is not a single-agent `gymnasium.Env` (a multi-agent or batched family's
            env), or its spaces are refused (`with_prev_spaces`).
    """
    if not getattr(cfg, FLAG, False):
        return env
    if not isinstance(env, gym.Env):
        raise ConfigError(
            FLAG,
            f"keeps the previous action and reward of a single-agent gymnasium.Env; {cfg.env!r} makes "
            f"a {type(env).__name__} (a multi-agent or batched env).",
            "pass --use_prev_action_reward=False.",
        )
    return PrevActionReward(env)
