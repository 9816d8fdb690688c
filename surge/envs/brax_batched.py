"""A batch of Brax envs as a surge batched env (`surge.envs.batched`'s contract), stepped in one
jitted call; arrays cross between JAX and torch/numpy through DLPack.

Data path per step (N envs, obs size O, action size A):
  actions `[N, A]` float32 numpy -> `torch.from_numpy` (no copy) -> `jax.dlpack.from_dlpack` (no
  copy on CPU when the buffer is 64-byte aligned, else JAX copies its N x A floats; on a GPU
  backend one host -> device copy)
  -> `jit(step)` -> obs `[N, O]`, reward `[N]`, done `[N]`, truncation `[N]` JAX arrays
  -> `torch.from_dlpack` (no copy) -> `.numpy()` (no copy on CPU; on a GPU one device -> host copy,
  since surge's trajectory buffers are host shared memory). The rollout worker then copies obs
  and rewards into its shared-memory trajectory buffers, as for any env.

Auto-reset is brax's `AutoResetWrapper`: on the step an episode ends, the returned obs is already
the first obs of the next episode (the same-step auto-reset of gymnasium's vector envs); the
reward and done flags are the ended step's. Episodes restart from the state `reset` drew for that
env (brax's behaviour: `first_pipeline_state`), not from a fresh random state.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from surge.envs.batched import BatchedInfo


def jax_to_numpy(x: Any) -> np.ndarray:
    """A JAX array as numpy through DLPack: a view of the same memory on CPU, one device -> host
    copy on a GPU."""
    import torch

    t = torch.from_dlpack(x)
    return t.numpy() if t.device.type == "cpu" else t.cpu().numpy()


def numpy_to_jax(a: np.ndarray) -> Any:
    """A numpy array as a JAX array through DLPack (`torch.from_numpy` -> `jax.dlpack.from_dlpack`):
    no copy on CPU when the buffer is aligned (JAX copies otherwise); JAX places it on its default
    device (a host -> device copy on a GPU)."""
    import jax
    import torch

    a = np.ascontiguousarray(a, dtype=np.float32)
    arr = jax.dlpack.from_dlpack(torch.from_numpy(a))
    dev = jax.devices()[0]
    return arr if dev.platform == "cpu" else jax.device_put(arr, dev)


class BraxAsMultiAgent:
    """`num_envs` copies of a brax env under brax's training wrappers, as agents of one batched env.

    `step(actions [N, A] float32)` -> obs `[N, O]` float32, rewards `[N]` float32 (summed over
    `action_repeat`), terminated `[N]` bool (`done` and not brax's `truncation`), truncated `[N]`
    bool (`info["truncation"]`: the episode hit `episode_length` env steps without terminating),
    `BatchedInfo` with the ended episodes' (index, return, length in env steps).
    """

    is_batched = True
    is_multiagent = True

    def __init__(
        self,
        task: str,
        num_envs: int,
        backend: str | None = None,
        episode_length: int = 1000,
        action_repeat: int = 1,
        seed: int = 0,
    ):
        import jax
        from brax import envs

        kwargs = {"backend": backend} if backend else {}
        self.brax_env = envs.get_environment(task, **kwargs)
        self.env = envs.training.wrap(
            self.brax_env, episode_length=episode_length, action_repeat=action_repeat
        )
        self._reset = jax.jit(self.env.reset)
        self._step = jax.jit(self._strong_step)  # the wrapped step is vmapped over the batch
        self.num_agents = int(num_envs)
        self.action_repeat = int(action_repeat)
        obs_high = np.full(self.brax_env.observation_size, np.inf, dtype=np.float32)
        self.observation_space = gym.spaces.Box(-obs_high, obs_high, dtype=np.float32)
        act_high = np.ones(self.brax_env.action_size, dtype=np.float32)
        self.action_space = gym.spaces.Box(-act_high, act_high, dtype=np.float32)
        self._seed = int(seed)
        self._state: Any = None
        self._ret = np.zeros(num_envs, dtype=np.float64)
        self._len = np.zeros(num_envs, dtype=np.int64)

    def _strong_step(self, state: Any, action: Any) -> Any:
        """brax's wrapped step with its outputs' weak types made strong: the reset state's leaves
        are strongly typed and step's `done`/`truncation` weakly, so without this `jit` compiles
        step twice (first on the reset state, then on its own output: ~20 s each on CPU)."""
        import jax

        return jax.tree.map(lambda x: jax.lax.convert_element_type(x, x.dtype), self.env.step(state, action))

    def reset(self, seed: int | None = None):
        """Resets every env (keys split from `seed`, or the constructor's seed); obs `[N, O]`."""
        import jax

        if seed is not None:
            self._seed = int(seed)
        keys = jax.random.split(jax.random.PRNGKey(self._seed), self.num_agents)
        self._state = self._reset(keys)
        self._ret[:] = 0.0
        self._len[:] = 0
        return jax_to_numpy(self._state.obs), [{} for _ in range(self.num_agents)]

    def step(self, actions):
        """One jitted step of the whole batch; see the class docstring for the shapes."""
        if self._state is None:
            self.reset()
        actions = np.asarray(actions, dtype=np.float32).reshape(self.num_agents, -1)
        self._state = self._step(self._state, numpy_to_jax(actions))
        s = self._state
        obs = jax_to_numpy(s.obs)
        rew = jax_to_numpy(s.reward).astype(np.float32, copy=False)
        done = jax_to_numpy(s.done) > 0
        trunc = (jax_to_numpy(s.info["truncation"]) > 0) & done
        term = done & ~trunc
        self._ret += rew
        self._len += 1
        binfo = BatchedInfo()
        for i in np.flatnonzero(done):
            binfo.episodes.append((int(i), float(self._ret[i]), int(self._len[i])))
        self._ret[done] = 0.0
        self._len[done] = 0
        return obs, rew, term, trunc, binfo

    def render(self):
        return None

    def close(self) -> None:
        self._state = None
