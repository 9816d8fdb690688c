"""Action distributions for Discrete, MultiDiscrete / Tuple-of-Discrete, Box, and Tuples mixing
Discrete and Box.

All are built from a flat `logits` tensor `[B, num_action_logits]` (float32), which is also what
rollouts store as the behavior policy's parameters (for the KL penalty). Entropy and KL come from
`torch.distributions` with argument validation off (it costs more than the math on small batches).
Acting (`sample_with_log_prob`, one call per inference pass) takes a shorter path of a few tensor
ops: on the batches of 4-16 agents an inference worker serves, `Categorical`'s construction,
`multinomial` and `log_prob` cost about 3x the sampling itself. Its results are checked against
`torch.distributions` in `tests/unit/test_distributions.py`.
"""

from __future__ import annotations

import math
from typing import cast

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor
from torch.distributions import Categorical, Normal, kl_divergence

from surge.errors import EnvError

torch.distributions.Distribution.set_default_validate_args(False)

#: the logit an illegal action gets: finite, so that no -inf enters a softmax, an entropy (0·-inf)
#: or a KL (-inf - -inf) as NaN; exp(-1e8 - logsumexp) is exactly 0 in float32
MASKED_LOGIT = -1e8
#: normalised logits below this are masked actions (legal ones stay far above it)
_LEGAL_ABOVE = MASKED_LOGIT / 10

# A distribution has at least one head, so `sum` over its heads' terms is a Tensor, never sum()'s
# start value 0: `cast(Tensor, sum(...))` below says so to the type checker (no runtime cost).


def _discrete_sizes(space: gym.Space) -> list[int] | None:
    if isinstance(space, gym.spaces.Discrete):
        return [int(space.n)]
    if isinstance(space, gym.spaces.MultiDiscrete):
        return [int(n) for n in np.asarray(space.nvec).ravel()]
    if isinstance(space, gym.spaces.Tuple):
        discretes = [s for s in space.spaces if isinstance(s, gym.spaces.Discrete)]
        if len(discretes) == len(space.spaces):
            return [int(s.n) for s in discretes]
    return None


def _mixed_parts(space: gym.Space) -> list[tuple[bool, int]] | None:
    """For a Tuple mixing Discrete and Box: (is_discrete, n or dim) per sub-space, else None."""
    if not isinstance(space, gym.spaces.Tuple):
        return None
    if not all(isinstance(s, (gym.spaces.Discrete, gym.spaces.Box)) for s in space.spaces):
        return None
    if not any(isinstance(s, gym.spaces.Box) for s in space.spaces):
        return None
    parts = []
    for s in space.spaces:
        if isinstance(s, gym.spaces.Discrete):
            parts.append((True, int(s.n)))
        elif isinstance(s, gym.spaces.Box):
            parts.append((False, int(np.prod(s.shape))))
    return parts


def num_action_logits(space: gym.Space) -> int:
    """Width of the flat logits vector for `space` (2 × dim for Box: mean and log-std)."""
    sizes = _discrete_sizes(space)
    if sizes is not None:
        return sum(sizes)
    if isinstance(space, gym.spaces.Box):
        return 2 * int(np.prod(space.shape))
    mixed = _mixed_parts(space)
    if mixed is not None:
        return sum(n if discrete else 2 * n for discrete, n in mixed)
    raise EnvError(
        f"action space {space} is not supported: use Discrete, MultiDiscrete, Box, or a Tuple of "
        "Discrete and Box"
    )


def action_shape(space: gym.Space) -> tuple[tuple[int, ...], torch.dtype]:
    """Per-agent shape and dtype of a stored action: `()` int64 for Discrete, `(n,)` int64 for
    MultiDiscrete/Tuple, `(dim,)` float32 for Box, `(heads + box dims,)` float32 for a Tuple mixing
    Discrete and Box (discrete indices stored as floats)."""
    sizes = _discrete_sizes(space)
    if sizes is not None:
        return ((), torch.int64) if isinstance(space, gym.spaces.Discrete) else ((len(sizes),), torch.int64)
    if isinstance(space, gym.spaces.Box):
        return (int(np.prod(space.shape)),), torch.float32
    mixed = _mixed_parts(space)
    if mixed is not None:  # one float per discrete head (its index), then each Box's values
        return (sum(1 if discrete else n for discrete, n in mixed),), torch.float32
    raise EnvError(f"action space {space} is not supported")


def apply_action_mask(space: gym.Space, logits: Tensor, mask: Tensor | None) -> Tensor:
    """`logits` `[..., num_logits]` float with the illegal actions' entries set to `MASKED_LOGIT`.

    Args:
        space: the Discrete or MultiDiscrete action space (a MultiDiscrete mask is the heads'
            masks concatenated).
        logits: the policy head's output.
        mask: `[..., num_logits]` bool or 0/1 (1 = legal), or None (returns `logits` as it is).
            A head whose mask has no legal entry (an agent whose turn it is not) is left unmasked:
            a distribution needs at least one action.
    Returns:
        The masked logits (a new tensor); the gradient of an illegal entry is 0 (`torch.where`).
    """
    if mask is None:
        return logits
    legal = mask if mask.dtype == torch.bool else mask != 0
    sizes = _discrete_sizes(space) or [legal.shape[-1]]
    if len(sizes) == 1:
        legal = legal | ~legal.any(-1, keepdim=True)
    else:
        legal = torch.cat([h | ~h.any(-1, keepdim=True) for h in torch.split(legal, sizes, dim=-1)], dim=-1)
    return torch.where(legal, logits, torch.full_like(logits, MASKED_LOGIT))


class ActionDistribution:
    """A batch of action distributions. Subclasses implement the interface below."""

    def sample(self) -> Tensor:
        raise NotImplementedError

    def sample_with_log_prob(self) -> tuple[Tensor, Tensor]:
        """A sampled action and its `[B]` float32 log-probability (`log_prob` of it), in one pass:
        what acting needs."""
        actions = self.sample()
        return actions, self.log_prob(actions)

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
        """`[B]` float32: the symmetric KL divergence 0.5·(KL(p||u) + KL(u||p)) against the uniform prior
        u, summed over heads (Sample Factory 2's `symmetric_kl_with_uniform_prior`, its
        `exploration_loss=symmetric_kl`)."""
        raise NotImplementedError


class CategoricalDistribution(ActionDistribution):
    """Independent categorical heads; one head for Discrete. Actions `[B]` or `[B, heads]` int64.

    `log_probs` holds each head's normalised log-probabilities `[B, n]` (`log_softmax`);
    `heads` the same as `torch.distributions.Categorical`, built on first use (entropy, KL).
    """

    def __init__(self, logits: Tensor, sizes: list[int], single: bool, all_legal: bool = False):
        """`all_legal`: the caller knows no action was masked (no `apply_action_mask` on these
        logits), so the symmetric KL takes the plain formula, without finding the legal actions."""
        self.sizes, self.single, self.all_legal = sizes, single, all_legal
        parts = [logits] if len(sizes) == 1 else torch.split(logits, sizes, dim=-1)
        self.log_probs = [torch.log_softmax(p, dim=-1) for p in parts]
        self._heads: list[Categorical] | None = None

    @property
    def heads(self) -> list[Categorical]:
        if self._heads is None:
            self._heads = [Categorical(logits=lp) for lp in self.log_probs]
        return self._heads

    def sample(self) -> Tensor:
        return self.sample_with_log_prob()[0]

    def sample_with_log_prob(self) -> tuple[Tensor, Tensor]:
        columns = [_exponential_race_sample(lp) for lp in self.log_probs]  # each `[..., 1]`
        log_prob = self.log_probs[0].gather(-1, columns[0]).squeeze_(-1)
        for lp, c in zip(self.log_probs[1:], columns[1:], strict=True):
            log_prob = log_prob + lp.gather(-1, c).squeeze_(-1)
        actions = columns[0].squeeze(-1) if self.single else torch.cat(columns, dim=-1)
        return actions, log_prob

    def mode(self) -> Tensor:
        if self.single:
            return self.log_probs[0].argmax(-1)
        return torch.stack([lp.argmax(-1) for lp in self.log_probs], dim=-1)

    def log_prob(self, actions: Tensor) -> Tensor:
        if self.single:
            return _gather(self.log_probs[0], actions)
        return cast(Tensor, sum(_gather(lp, actions[..., i]) for i, lp in enumerate(self.log_probs)))

    def entropy(self) -> Tensor:
        # H = -sum_a p(a) log p(a) on the normalised log-probabilities, with log p clamped to the
        # dtype's lowest finite value so that a masked action (p = 0, log p = -inf) adds 0, not NaN:
        # `torch.distributions.Categorical.entropy`'s formula, without building the distribution,
        # which would normalise the logits a second time (the cost: docs/benchmarks.md)
        return cast(Tensor, sum(_entropy(lp) for lp in self.log_probs))

    def kl(self, other: ActionDistribution) -> Tensor:
        assert isinstance(other, CategoricalDistribution)
        return cast(Tensor, sum(kl_divergence(a, b) for a, b in zip(self.heads, other.heads, strict=True)))

    def symmetric_kl_with_uniform(self) -> Tensor:
        """Against the uniform distribution over the legal actions when logits are masked
        (`apply_action_mask`): masked entries take no part, as if the action did not exist.
        With `all_legal`, Sample Factory's formula over all n actions (u = 1/n):
        `0.5·(Σ p·(log p - log u) + log u - mean(log p))`, 8 operations per head instead of 16."""
        total: Tensor | None = None
        for log_p in self.log_probs:  # normalised log-probabilities
            if self.all_legal:
                log_un = -math.log(log_p.shape[-1])
                kl = (log_p.exp() * (log_p - log_un)).sum(-1) + (log_un - log_p.mean(-1))
            else:
                legal = log_p > _LEGAL_ABOVE
                n_legal = legal.sum(-1, keepdim=True).to(log_p.dtype)
                log_u = -n_legal.log()
                kl_pu = (log_p.exp() * (log_p - log_u)).sum(-1)  # masked actions' probs are 0
                kl_up = torch.where(legal, (log_u - log_p) / n_legal, torch.zeros_like(log_p)).sum(-1)
                kl = kl_pu + kl_up
            total = 0.5 * kl if total is None else total + 0.5 * kl
        assert total is not None  # at least one head
        return total


class GaussianDistribution(ActionDistribution):
    """Diagonal Gaussian; logits = cat(mean, log_std) `[B, 2·dim]` (log_std clamped to [-20, 2]).
    Actions `[B, dim]` float32."""

    def __init__(self, logits: Tensor):
        self.mean, log_std = logits.chunk(2, dim=-1)
        self.log_std = log_std.clamp(-20.0, 2.0)
        self._normal: Normal | None = None

    @property
    def normal(self) -> Normal:
        """The same as `torch.distributions.Normal`, built on first use."""
        if self._normal is None:
            self._normal = Normal(self.mean, self.log_std.exp())
        return self._normal

    def sample(self) -> Tensor:
        """`[B, dim]`, not reparameterised (no gradient), as `Normal.sample`."""
        with torch.no_grad():
            return self.mean + self.log_std.exp() * torch.randn_like(self.mean)

    def sample_with_log_prob(self) -> tuple[Tensor, Tensor]:
        """a = mean + std·ε with ε ~ N(0, I), without gradient. Without autograd (acting), the
        log-probability comes from ε itself: log N(a; mean, std) = Σ (-ε²/2 - log std - log √(2π))
        (`Normal.log_prob` of `a` up to float rounding); with it, from `log_prob(a)`, whose gradient
        with respect to the mean is the score function's."""
        if torch.is_grad_enabled() and self.mean.requires_grad:
            actions = self.sample()
            return actions, self.log_prob(actions)
        eps = torch.randn_like(self.mean)
        actions = self.mean + self.log_std.exp() * eps
        return actions, (-0.5 * eps.square() - self.log_std - _HALF_LOG_2PI).sum(-1)

    def mode(self) -> Tensor:
        return self.mean

    def log_prob(self, actions: Tensor) -> Tensor:
        return self.normal.log_prob(actions).sum(-1)

    def entropy(self) -> Tensor:
        return self.normal.entropy().sum(-1)

    def kl(self, other: ActionDistribution) -> Tensor:
        assert isinstance(other, GaussianDistribution)
        return kl_divergence(self.normal, other.normal).sum(-1)

    def symmetric_kl_with_uniform(self) -> Tensor:
        return -self.entropy()  # no uniform prior on an unbounded space; fall back to entropy


class MixedDistribution(ActionDistribution):
    """A Tuple of Discrete and Box heads (Doom: buttons plus continuous turning), independent.

    Logits: each head's in order (n for Discrete, 2·dim for Box). Actions `[B, heads + box dims]`
    float32: a discrete head's index as a float, then each Box's values. log_prob / entropy / kl
    are sums over heads; the exploration loss is the categorical heads' symmetric KL with uniform
    plus the Gaussian heads' negative entropy.
    """

    def __init__(self, logits: Tensor, parts: list[tuple[bool, int]]):
        widths = [n if discrete else 2 * n for discrete, n in parts]
        self.parts = parts
        self.heads: list[ActionDistribution] = [
            CategoricalDistribution(chunk, [n], True) if discrete else GaussianDistribution(chunk)
            for (discrete, n), chunk in zip(parts, torch.split(logits, widths, dim=-1), strict=True)
        ]

    def _split(self, actions: Tensor) -> list[Tensor]:
        widths = [1 if discrete else n for discrete, n in self.parts]
        chunks = torch.split(actions, widths, dim=-1)
        return [c[..., 0].long() if d else c for (d, _), c in zip(self.parts, chunks, strict=True)]

    def _join(self, values: list[Tensor]) -> Tensor:
        return torch.cat(
            [v.unsqueeze(-1).float() if d else v for (d, _), v in zip(self.parts, values, strict=True)],
            dim=-1,
        )

    def sample(self) -> Tensor:
        return self._join([h.sample() for h in self.heads])

    def mode(self) -> Tensor:
        return self._join([h.mode() for h in self.heads])

    def log_prob(self, actions: Tensor) -> Tensor:
        return cast(Tensor, sum(h.log_prob(a) for h, a in zip(self.heads, self._split(actions), strict=True)))

    def entropy(self) -> Tensor:
        return cast(Tensor, sum(h.entropy() for h in self.heads))

    def kl(self, other: ActionDistribution) -> Tensor:
        assert isinstance(other, MixedDistribution)
        return cast(Tensor, sum(a.kl(b) for a, b in zip(self.heads, other.heads, strict=True)))

    def symmetric_kl_with_uniform(self) -> Tensor:
        return cast(Tensor, sum(h.symmetric_kl_with_uniform() for h in self.heads))


_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _gather(log_p: Tensor, actions: Tensor) -> Tensor:
    """`log_p[..., actions]`: `[..., n]` float, `[...]` int -> `[...]`."""
    return log_p.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)


def _entropy(log_p: Tensor) -> Tensor:
    """Entropy `[...]` of `[..., n]` normalised log-probabilities: `-sum p log p` (Shannon 1948),
    `log p` clamped to the dtype's lowest finite value so that a zero-probability action adds 0."""
    return -(log_p.clamp(min=torch.finfo(log_p.dtype).min) * log_p.exp()).sum(-1)


def _exponential_race_sample(log_p: Tensor) -> Tensor:
    """One draw per row of `[..., n]` normalised log-probabilities -> `[..., 1]` int64 (the column
    `gather` takes): `argmax_i p_i / E_i` with `E_i ~ Exp(1)` independent, i.e. the action whose
    exponential clock `E_i / p_i` rings first, which is action i with probability `p_i / sum_j p_j`
    (the exponential form of the Gumbel-max trick, Gumbel 1954; Maddison, Tarlow & Minka 2014,
    "A* Sampling", sec. 2). Six small ops where inverse-CDF sampling took ten: it is the acting
    path's cost on a small model (docs/benchmarks.md; `torch.multinomial` costs several times
    more on small batches).

    `E` is kept at or above the dtype's smallest normal number, so a zero-probability action (a
    masked one: exp(MASKED_LOGIT - ...) is exactly 0) scores exactly 0 and is never drawn, even
    when a clock is 0; NaN logits score NaN, which `argmax` takes as the largest, so the draw is
    still an action of the space."""
    clocks = torch.empty_like(log_p).exponential_().clamp_(min=torch.finfo(log_p.dtype).tiny)
    return log_p.exp().div_(clocks).argmax(-1, keepdim=True)


def make_distribution(
    space: gym.Space, logits: Tensor, action_mask: Tensor | None = None, all_legal: bool = False
) -> ActionDistribution:
    """The action distribution of `space` parameterised by `logits` `[B, num_action_logits(space)]`;
    with `action_mask` `[B, num_action_logits]` (bool or 0/1, 1 = legal; Discrete and MultiDiscrete
    only) the illegal actions get probability 0, and entropy and KL are over the legal ones
    (`apply_action_mask`). `all_legal`: the caller knows `logits` were never masked (a model
    without action masks), which spares the symmetric KL the search for the legal actions."""
    if action_mask is not None:
        logits, all_legal = apply_action_mask(space, logits, action_mask), False
    sizes = _discrete_sizes(space)
    if sizes is not None:
        return CategoricalDistribution(logits, sizes, isinstance(space, gym.spaces.Discrete), all_legal)
    mixed = _mixed_parts(space)
    if mixed is not None:
        return MixedDistribution(logits, mixed)
    return GaussianDistribution(logits)


def random_actions(space: gym.Space, n: int, action_mask: Tensor | None = None) -> Tensor:
    """`n` uniformly random actions of `space` in the buffers' layout (the dummy sampler's policy);
    with `action_mask` `[n, num_logits]` bool (Discrete, MultiDiscrete), uniform over the legal
    actions of each row (each head), every action where a head's row has none."""
    if action_mask is not None:
        logits = apply_action_mask(space, torch.zeros(action_mask.shape), action_mask)
        actions = make_distribution(space, logits).sample()
        return actions + int(space.start) if isinstance(space, gym.spaces.Discrete) else actions
    if isinstance(space, gym.spaces.Discrete):
        return torch.randint(int(space.n), (n,)) + int(space.start)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return torch.stack([torch.randint(int(k), (n,)) for k in space.nvec.reshape(-1)], dim=1)
    if isinstance(space, gym.spaces.Tuple):
        return torch.stack(
            [torch.randint(int(cast(gym.spaces.Discrete, s).n), (n,)) for s in space.spaces], dim=1
        )
    box = cast(gym.spaces.Box, space)  # the remaining kind the buffers' layout knows
    low = torch.as_tensor(box.low, dtype=torch.float32).reshape(-1)
    high = torch.as_tensor(box.high, dtype=torch.float32).reshape(-1)
    return low + torch.rand(n, low.numel()) * (high - low)
