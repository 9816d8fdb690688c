"""Action distributions for Discrete, MultiDiscrete / Tuple-of-Discrete and Box action spaces.

All are built from a flat `logits` tensor `[B, num_action_logits]` (float32), which is also what
rollouts store as the behavior policy's parameters (for the KL penalty). Built on
`torch.distributions` with argument validation off (it costs more than the math on small batches).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor
from torch.distributions import Categorical, Normal, kl_divergence

from surge.errors import EnvError

torch.distributions.Distribution.set_default_validate_args(False)


def _discrete_sizes(space: gym.Space) -> list[int] | None:
    if isinstance(space, gym.spaces.Discrete):
        return [int(space.n)]
    if isinstance(space, gym.spaces.MultiDiscrete):
        return [int(n) for n in np.asarray(space.nvec).ravel()]
    if isinstance(space, gym.spaces.Tuple) and all(isinstance(s, gym.spaces.Discrete) for s in space.spaces):
        return [int(s.n) for s in space.spaces]
    return None


def num_action_logits(space: gym.Space) -> int:
    """Width of the flat logits vector for `space` (2 × dim for Box: mean and log-std)."""
    sizes = _discrete_sizes(space)
    if sizes is not None:
        return sum(sizes)
    if isinstance(space, gym.spaces.Box):
        return 2 * int(np.prod(space.shape))
    raise EnvError(
        f"action space {space} is not supported: use Discrete, MultiDiscrete, a Tuple of Discrete, or Box"
    )


def action_shape(space: gym.Space) -> tuple[tuple[int, ...], torch.dtype]:
    """Per-agent shape and dtype of a stored action: `()` int64 for Discrete, `(n,)` int64 for
    MultiDiscrete/Tuple, `(dim,)` float32 for Box."""
    sizes = _discrete_sizes(space)
    if sizes is not None:
        return ((), torch.int64) if isinstance(space, gym.spaces.Discrete) else ((len(sizes),), torch.int64)
    if isinstance(space, gym.spaces.Box):
        return (int(np.prod(space.shape)),), torch.float32
    raise EnvError(f"action space {space} is not supported")


class ActionDistribution:
    """A batch of action distributions. Subclasses implement the interface below."""

    def sample(self) -> Tensor:
        raise NotImplementedError

    def mode(self) -> Tensor:
        """The most likely action (deterministic evaluation)."""
        raise NotImplementedError

    def log_prob(self, actions: Tensor) -> Tensor:
        """`[B]` float32 log-probability of `actions` (joint over heads / dimensions)."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """`[B]` float32 entropy (summed over heads / dimensions)."""
        raise NotImplementedError

    def kl(self, other: ActionDistribution) -> Tensor:
        """`[B]` KL(self || other)."""
        raise NotImplementedError

    def symmetric_kl_with_uniform(self) -> Tensor:
        """`[B]` KL(u||p) + KL(p||u) against the uniform prior u (Sample Factory's exploration loss)."""
        raise NotImplementedError


class CategoricalDistribution(ActionDistribution):
    """Independent categorical heads; one head for Discrete. Actions `[B]` or `[B, heads]` int64."""

    def __init__(self, logits: Tensor, sizes: list[int], single: bool):
        self.sizes, self.single = sizes, single
        parts = [logits] if len(sizes) == 1 else torch.split(logits, sizes, dim=-1)
        self.heads = [Categorical(logits=p) for p in parts]

    def sample(self) -> Tensor:
        if self.single:
            return self.heads[0].sample()
        return torch.stack([h.sample() for h in self.heads], dim=-1)

    def mode(self) -> Tensor:
        if self.single:
            return self.heads[0].logits.argmax(-1)
        return torch.stack([h.logits.argmax(-1) for h in self.heads], dim=-1)

    def log_prob(self, actions: Tensor) -> Tensor:
        if self.single:
            return self.heads[0].log_prob(actions)
        return sum(h.log_prob(actions[..., i]) for i, h in enumerate(self.heads))

    def entropy(self) -> Tensor:
        return sum(h.entropy() for h in self.heads)

    def kl(self, other: ActionDistribution) -> Tensor:
        assert isinstance(other, CategoricalDistribution)
        return sum(kl_divergence(a, b) for a, b in zip(self.heads, other.heads, strict=True))

    def symmetric_kl_with_uniform(self) -> Tensor:
        total = 0.0
        for h, n in zip(self.heads, self.sizes, strict=True):
            log_p = h.logits  # normalised log-probabilities
            log_u = -math.log(n)
            kl_pu = (h.probs * (log_p - log_u)).sum(-1)
            kl_up = ((log_u - log_p) / n).sum(-1)
            total = total + kl_pu + kl_up
        return total


class GaussianDistribution(ActionDistribution):
    """Diagonal Gaussian; logits = cat(mean, log_std) `[B, 2·dim]`. Actions `[B, dim]` float32."""

    def __init__(self, logits: Tensor):
        mean, log_std = logits.chunk(2, dim=-1)
        self.normal = Normal(mean, log_std.clamp(-20.0, 2.0).exp())

    def sample(self) -> Tensor:
        return self.normal.sample()

    def mode(self) -> Tensor:
        return self.normal.mean

    def log_prob(self, actions: Tensor) -> Tensor:
        return self.normal.log_prob(actions).sum(-1)

    def entropy(self) -> Tensor:
        return self.normal.entropy().sum(-1)

    def kl(self, other: ActionDistribution) -> Tensor:
        assert isinstance(other, GaussianDistribution)
        return kl_divergence(self.normal, other.normal).sum(-1)

    def symmetric_kl_with_uniform(self) -> Tensor:
        return -self.entropy()  # no uniform prior on an unbounded space; fall back to entropy


def make_distribution(space: gym.Space, logits: Tensor) -> ActionDistribution:
    """The action distribution of `space` parameterised by `logits` `[B, num_action_logits(space)]`."""
    sizes = _discrete_sizes(space)
    if sizes is not None:
        return CategoricalDistribution(logits, sizes, isinstance(space, gym.spaces.Discrete))
    return GaussianDistribution(logits)
