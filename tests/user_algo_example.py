"""A user's algorithm written against surge's algorithm seams only (docs/algorithms.md, "Write your
own algorithm"); `--algo=tests.user_algo_example:USER_AC` loads it. The docs' guide quotes this
file and `tests/integration/test_seams_user_algorithm.py` runs it, so the guide stays true.

USER_AC is a one-step actor-critic for discrete actions with the critic outside the acting module:
- the acting module is a policy alone (`PolicyNet`): inference and `surge enjoy` never build the
  critic;
- the learner owns a critic V and its Polyak-averaged target V' (`ModelParts.learner_modules`),
  trained by an optimizer of their own (`LearnerBase.optimizers["critic"]`) beside the policy's
  ("model"), with a learning-rate scheduler (`LearnerBase.schedulers["critic"]`);
- the TD target is r + gamma (1 - terminated) V'(s') (truncated steps bootstrap), the advantage
  A = target - V(s), the policy loss -log pi(a|s) A and the critic loss (V(s) - target)^2
  (Sutton & Barto 2018, section 13.5, one-step actor-critic, with a target network as in Mnih et
  al. 2015); the target follows V' <- tau V + (1 - tau) V' after each step (Lillicrap et al. 2016,
  Algorithm 1).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from torch import Tensor, nn

from surge.cfg.config import Config, algo_params, param
from surge.errors import ConfigError
from surge.learning.algorithm import ActContext, Algorithm, ModelParts, register_algorithm
from surge.learning.base import LearnerBase
from surge.learning.pg_checks import POLICY_GRADIENT_PARAMS

#: eval_act's calls (the test checks that `surge enjoy` acts through it)
EVAL_CALLS = [0]


@dataclass
class UserACParams:
    """USER_AC's own flags: the section `cfg.algo_params` (`--help` shows them under "algorithm
    tests.user_algo_example:USER_AC")."""

    user_critic_lr: float = param(1e-3, "Adam learning rate of the critic.")
    user_tau: float = param(0.05, "Polyak rate of the target critic, in (0, 1].")
    user_hidden: int = param(32, "Hidden units of the policy and of the critic.")

    def validate(self) -> None:
        """Raises `ConfigError` for a flag out of range (called before any process starts)."""
        if not 0.0 < self.user_tau <= 1.0:
            raise ConfigError("user_tau", f"must be in (0, 1], got {self.user_tau}.", "e.g. --user_tau=0.05.")
        if self.user_critic_lr <= 0:
            raise ConfigError("user_critic_lr", f"must be > 0, got {self.user_critic_lr}.", "")


def _mlp(inputs: int, hidden: int, outputs: int) -> nn.Module:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, outputs))


class PolicyNet(nn.Module):
    """The acting module: obs `[B, obs_dim]` float32 -> action logits `[B, num_actions]`."""

    rnn_state_size = 0  # `ActingModule`: no recurrent state

    def __init__(self, obs_dim: int, num_actions: int, hidden: int):
        super().__init__()
        self.net = _mlp(obs_dim, hidden, num_actions)

    def forward(self, obs: Tensor) -> Tensor:
        return self.net(obs)


def make_parts(cfg: Config, obs_space: gym.Space, action_space: gym.Space) -> ModelParts:
    """`Algorithm.make_model`: the policy acts; the critic and its target are the learner's."""
    p = algo_params(cfg, UserACParams)
    assert isinstance(action_space, gym.spaces.Discrete) and obs_space.shape is not None
    obs_dim = int(torch.tensor(obs_space.shape).prod())
    critic = _mlp(obs_dim, p.user_hidden, 1)
    target = copy.deepcopy(critic).requires_grad_(False)
    return ModelParts(
        PolicyNet(obs_dim, int(action_space.n), p.user_hidden), {"critic": critic, "target": target}
    )


def act(model: nn.Module, obs: Any, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """`Algorithm.act`: actions `[B]` int64 sampled from the policy (argmax when
    `ctx.deterministic`); the hidden state stays `[B, 0]`."""
    logits = model(obs.float())
    actions = (
        logits.argmax(-1) if ctx.deterministic else torch.distributions.Categorical(logits=logits).sample()
    )
    return {"actions": actions, "rnn_states": rnn_states}


def eval_act(model: nn.Module, obs: Any, rnn_states: Tensor, ctx: ActContext) -> dict[str, Tensor]:
    """`Algorithm.eval_act`: the greedy action, whatever `ctx.deterministic` says."""
    EVAL_CALLS[0] += 1
    return act(model, obs, rnn_states, ActContext(deterministic=True))


class UserACLearner(LearnerBase):
    """One step of both optimizers per batch (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.params = algo_params(self.cfg, UserACParams)
        critic = self.learner_modules["critic"]
        self.optimizers["critic"] = torch.optim.Adam(critic.parameters(), lr=self.params.user_critic_lr)
        # the critic's learning rate decays by 1% per update (a scheduler of the algorithm's own)
        self.schedulers["critic"] = torch.optim.lr_scheduler.ExponentialLR(self.optimizers["critic"], 0.99)

    def train_batch(self, b: dict[str, Any], env_frames: int = 0) -> dict[str, float]:
        """Trains on a batch of `prepare_batch` (obs `[T+1, N, obs_dim]`, actions `[T, N]`,
        rewards `[T, N]`); returns policy_loss, value_loss and policy_version."""
        self._mask_stale(b)
        critic, target = self.learner_modules["critic"], self.learner_modules["target"]
        T = b["rewards"].shape[0]
        obs = b["obs"].float()
        terminated = b["terminated"]  # `[T, N]` 0/1 float32, truncations apart
        with torch.no_grad():
            next_v = target(obs[1:]).squeeze(-1)
            targets = b["rewards"] + self.hp.gamma * (1.0 - terminated) * next_v
        v = critic(obs[:T]).squeeze(-1)
        valids = b["valids"]
        count = valids.sum().clamp(min=1.0)
        value_loss = (((v - targets) ** 2) * valids).sum() / count
        adv = (targets - v).detach()
        log_probs = torch.distributions.Categorical(logits=self.model(obs[:T])).log_prob(b["actions"])
        policy_loss = -(log_probs * adv * valids).sum() / count
        for opt in self.optimizers.values():
            opt.zero_grad(set_to_none=True)
        (policy_loss + value_loss).backward()
        for opt in self.optimizers.values():
            opt.step()
        self.schedulers["critic"].step()
        with torch.no_grad():
            tau = self.params.user_tau
            for p_t, p in zip(target.parameters(), critic.parameters(), strict=True):
                p_t.lerp_(p, tau)
        self.policy_version += 1
        return {
            "policy_loss": float(policy_loss.detach()),
            "value_loss": float(value_loss.detach()),
            "policy_version": float(self.policy_version),
        }


USER_AC = register_algorithm(
    Algorithm(
        name="USER_AC",
        description="a user's one-step actor-critic with a learner-only critic (docs/algorithms.md)",
        step_fields=lambda action_space: [],
        act=act,
        eval_act=eval_act,
        make_learner=UserACLearner,
        make_model=make_parts,
        params=UserACParams,
        default_overrides={"num_minibatches_to_accumulate": 0, "learning_rate": 1e-3},
        unused_params=POLICY_GRADIENT_PARAMS,
        metric_tags={"policy_loss": "losses/policy_loss", "value_loss": "losses/value_loss"},
    )
)
