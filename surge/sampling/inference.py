"""The inference worker: one batched forward pass for many `(slots, t)` requests, reading
observations and hidden states from the trajectory buffers and writing actions back.
Placement-agnostic like the rollout worker."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.data.trajectory import TrajectoryBuffers, tree_map


class InferenceWorker:
    """Acts for batches of agents with `model.act`.

    Args:
        model: the actor-critic (its weights are the current policy).
        buffers: the trajectory buffers requests index into.
        device: where the forward pass runs.
    """

    def __init__(
        self, model: nn.Module, buffers: TrajectoryBuffers, device: torch.device, random_actions: bool = False
    ):
        self.model, self.buffers, self.device = model, buffers, device
        self.policy_version = 0
        self.samples = 0
        self.random_actions = random_actions

    @torch.no_grad()
    def infer(self, requests: list[tuple[Tensor, int]]) -> None:
        """Acts on every request `(slots [N] int64, t)` in one forward pass.

        Writes `actions`, `behavior_log_probs`, `values`, `action_logits`, `policy_version` at
        `(slots, t)` and the next hidden state at `(slots, t + 1)`.
        """
        if len(requests) == 1:
            slots, t = requests[0]
            ts: Tensor | int = t
        else:
            slots = torch.cat([s for s, _ in requests])
            ts = torch.cat([torch.full((len(s),), t, dtype=torch.int64) for s, t in requests])
        buf, dev = self.buffers, self.device
        if self.random_actions:
            buf.actions[slots, ts] = _random_actions(self.model.action_space, len(slots))
            buf.policy_version[slots, ts] = self.policy_version
            self.samples += len(slots)
            return
        obs = tree_map(lambda x: x[slots, ts].to(dev, non_blocking=True), buf.obs)
        out = self.model.act(obs, buf.rnn_states[slots, ts].to(dev, non_blocking=True))
        buf.actions[slots, ts] = out.actions.cpu()
        buf.behavior_log_probs[slots, ts] = out.log_probs.cpu()
        buf.values[slots, ts] = out.values.cpu()
        buf.action_logits[slots, ts] = out.logits.cpu()
        buf.policy_version[slots, ts] = self.policy_version
        if out.rnn_states.shape[-1]:
            buf.rnn_states[slots, ts + 1] = out.rnn_states.cpu()
        self.samples += len(slots)


def _random_actions(space: gym.Space, n: int) -> Tensor:
    """`n` uniformly random actions of `space` in the buffers' layout (the dummy sampler's policy)."""
    if isinstance(space, gym.spaces.Discrete):
        return torch.randint(int(space.n), (n,)) + int(space.start)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return torch.stack([torch.randint(int(k), (n,)) for k in space.nvec.reshape(-1)], dim=1)
    if isinstance(space, gym.spaces.Tuple):
        return torch.stack([torch.randint(int(s.n), (n,)) for s in space.spaces], dim=1)
    low = torch.as_tensor(space.low, dtype=torch.float32).reshape(-1)
    high = torch.as_tensor(space.high, dtype=torch.float32).reshape(-1)
    return low + torch.rand(n, low.numel()) * (high - low)


def set_torch_threads(cfg: Any, default: int) -> None:
    """Sets torch's intra-op threads from `cfg.num_torch_threads` (0: `default`)."""
    torch.set_num_threads(cfg.num_torch_threads or default)
