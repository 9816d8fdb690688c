"""`Policy`: a trained policy acting on numpy observations, what `surge.load_policy` returns."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from surge.errors import EnvError
from surge.export.load import LoadedPolicy
from surge.learning.algorithm import ActContext, acting_state_size, get_algorithm
from surge.learning.central_value import actor_obs
from surge.sampling.env_actions import BoxActionMap


class Policy:
    """Acts with the checkpointed acting module of one policy, as `surge enjoy` does: the
    algorithm's `evaluation_act`, observation normalisation included (it is part of the model),
    Box actions mapped onto the env's bounds per the run's `clip_actions` / `rescale_actions` (the
    actions are what the env's `step` takes).

    Attributes:
        cfg: the run's config; obs_space, action_space: one agent's spaces (obs_space is the
            actor's: without the central value's state entry); checkpoint: the weights' file;
        rnn_state_size: floats of recurrent state per agent (0: a feed-forward policy).
    """

    def __init__(self, loaded: LoadedPolicy, device: str = "cpu"):
        self.cfg = loaded.cfg
        self.obs_space, self.action_space = loaded.obs_space, loaded.action_space
        self.checkpoint = loaded.checkpoint
        self.device = torch.device(device)
        self.model = loaded.model.to(self.device)
        self.rnn_state_size = acting_state_size(self.model)
        self._act = get_algorithm(self.cfg.algo).evaluation_act
        space = self.action_space
        self._box_map = (
            BoxActionMap(space.low, space.high, self.cfg.clip_actions, self.cfg.rescale_actions)
            if isinstance(space, gym.spaces.Box)
            else None
        )

    def initial_state(self, batch: int | None = None) -> np.ndarray | None:
        """The recurrent state at an episode's start: zeros `[batch, rnn_state_size]` float32, or
        `[rnn_state_size]` for one agent (`batch` None); None for a feed-forward policy."""
        if not self.rnn_state_size:
            return None
        shape = (self.rnn_state_size,) if batch is None else (batch, self.rnn_state_size)
        return np.zeros(shape, np.float32)

    def _batched(self, obs: Any) -> tuple[Any, bool]:
        """`obs` as a batch of numpy arrays (a dict of them for Dict spaces) and whether it was one
        observation (its batch axis added here)."""
        space = self.obs_space
        if isinstance(space, gym.spaces.Dict) or isinstance(obs, dict):
            if not isinstance(obs, dict):
                raise EnvError(f"the policy takes dict observations ({space}), got {type(obs).__name__}")
            arrays = {k: np.asarray(v) for k, v in obs.items()}
            spaces = space.spaces if isinstance(space, gym.spaces.Dict) else {}
            key = next((k for k in arrays if k in spaces), None)
            single = key is not None and arrays[key].shape == spaces[key].shape
            return ({k: v[None] for k, v in arrays.items()} if single else arrays), single
        assert isinstance(space, gym.spaces.Box)
        array = np.asarray(obs, dtype=space.dtype)
        if array.shape == space.shape:
            return array[None], True
        if array.shape[1:] != space.shape:
            raise EnvError(
                f"observation of shape {array.shape}: the policy takes {space.shape} (one agent) or "
                f"[B, *{space.shape}] (a batch)"
            )
        return array, False

    def act(
        self, obs: Any, state: np.ndarray | None = None, deterministic: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """One step for one agent's observation or a batch of them.

        Args:
            obs: one observation as the env returns it (`obs_space.shape`; a dict for Dict spaces)
                or a batch `[B, *shape]` (a dict of batches), any numeric dtype (cast to the space's).
            state: the state this method returned at the previous step; None (or `initial_state`)
                at an episode's start. Ignored by a feed-forward policy.
            deterministic: the distribution's mode (argmax, the Gaussian's mean) when True, else a
                sample.
        Returns:
            (action, state): the action(s) for the env's `step` (a batch `[B, ...]` for a batch,
            no batch axis for one observation; int64 for discrete actions, float32 for Box), and
            the next recurrent state (`[B, rnn_state_size]` float32, `[rnn_state_size]` for one
            observation; None for a feed-forward policy).
        Raises:
            EnvError: an observation whose shape is neither one nor a batch of `obs_space`'s.
        """
        batch, single = self._batched(obs)
        with torch.no_grad():
            if isinstance(batch, dict):
                obs_t: Any = {k: torch.as_tensor(v, device=self.device) for k, v in batch.items()}
                n = len(next(iter(batch.values())))
                if self.cfg.central_value:  # the actor never sees the central value's state
                    obs_t = actor_obs(obs_t, self.cfg.central_value_state_key)
            else:
                obs_t, n = torch.as_tensor(batch, device=self.device), len(batch)
            if state is None or not self.rnn_state_size:
                rnn = torch.zeros(n, self.rnn_state_size, device=self.device)
            else:
                rnn = torch.as_tensor(np.asarray(state, np.float32).reshape(n, -1), device=self.device)
            out = self._act(self.model, obs_t, rnn, ActContext(deterministic=deterministic))
        actions = out["actions"].cpu().numpy()
        if self._box_map is not None:  # as the rollout workers do (surge.sampling.env_actions)
            actions = self._box_map(actions.reshape(len(actions), -1)).reshape(actions.shape)
        new_state = out["rnn_states"].cpu().numpy() if self.rnn_state_size else None
        if single:
            return actions[0], None if new_state is None else new_state[0]
        return actions, new_state
