"""A partially-observed task where the state holds what the actor's observation hides: the test bed
of the central value (asymmetric actor-critic, docs/central_value.md).

`--env=occluded_payout` (one agent) and `--env=occluded_payout_duo` (two agents sharing one state).

Episode: `EPISODE_STEPS` (8) env steps, `terminated` at the end, never truncated.

- Every step the agent sees a target `g ∈ {0..NUM_TARGETS-1}` (uniformly random, one-hot) and the
  step's phase `t / EPISODE_STEPS`; it gets reward 1 when its action equals `g`, 0 otherwise.
- A hidden loan: at reset a hidden amount `j ∈ {-LOAN, +LOAN}` (LOAN = 8, uniformly random) is
  drawn; it is paid out with the reward of step `LOAN_STEP` (0, the first) and taken back with the
  reward of the last step. It is never in the actor's observation, and it cancels in the
  (undiscounted) episode return.

The best policy (act on the target) gets return 8 whatever `j`; a uniformly random one 2. The
loan adds nothing to the return but a lot to the value of every step after the payout (-j),
which a critic that sees only the actor's observation cannot predict: its advantages carry that
noise. The state, `Box((NUM_TARGETS + 3,))`: the actor's observation, `j / LOAN` and whether the
loan is out (1 between the payout and the repayment), so a central value can predict it.

Observation: `Dict(obs=Box(0, 1, (NUM_TARGETS + 1,)), state=Box(-1, 1, (NUM_TARGETS + 3,)))`
(rl_games' convention: `obs` for the actor, `state` for the central value); action
`Discrete(NUM_TARGETS)`.

The duo: two agents, each with its own target and reward; one loan shared by both (the same `j`,
paid to and taken back from each). Both agents' observation Dicts carry the same state: both
targets, the phase, `j / LOAN` and the loan flag (`Box((2 * NUM_TARGETS + 3,))`): each agent's
trajectory holds it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from surge.cfg.config import Config
from surge.envs.registry import register_env

NUM_TARGETS = 4
EPISODE_STEPS = 8
LOAN = 8.0
LOAN_STEP = 0
#: expected episode returns of a uniformly random policy and of the best one
RANDOM_RETURN = EPISODE_STEPS / NUM_TARGETS
BEST_RETURN = float(EPISODE_STEPS)

#: feed-forward actor and critic, GAE, returns normalised
#: (both critics fit targets in units of their running std); the central value takes 4 passes of
#: minibatches of 64 per batch (16 Adam steps per batch of 256, the policy 2): with the policy's
#: 2 steps it fits the loan too slowly to help (measured in docs/central_value.md)
OCCLUDED_DEFAULTS = {
    "encoder_type": "mlp",
    "encoder_subtype": "mlp",
    "encoder_mlp_layers": [32],
    "hidden_size": 32,
    "use_rnn": False,
    "rollout": 8,
    "recurrence": 1,
    "with_vtrace": False,
    "num_envs_per_worker": 8,
    "batch_size": 256,
    "ppo_epochs": 2,
    "learning_rate": 0.003,
    "nonlinearity": "tanh",
    "normalize_returns": True,
    "central_value_mini_epochs": 4,
    "central_value_minibatch_size": 64,
}


def _one_hot(i: int) -> np.ndarray:
    x = np.zeros(NUM_TARGETS, np.float32)
    x[i] = 1.0
    return x


class _Loan:
    """The episode's clock, hidden loan and rewards shared by both envs."""

    def __init__(self, rng: np.random.Generator):
        self.rng, self.t = rng, 0
        self.j = float(rng.choice([-LOAN, LOAN]))

    def out(self) -> float:
        return 1.0 if LOAN_STEP < self.t <= EPISODE_STEPS - 1 else 0.0

    def payment(self) -> float:
        """The loan's part of the reward of step `self.t` (before it advances)."""
        if self.t == LOAN_STEP:
            return self.j
        if self.t == EPISODE_STEPS - 1:
            return -self.j
        return 0.0

    def hidden(self) -> np.ndarray:
        return np.array([self.t / EPISODE_STEPS, self.j / LOAN, self.out()], np.float32)


class OccludedPayoutEnv(gym.Env):
    """One agent; see the module docstring."""

    metadata = {"render_modes": []}
    action_space = gym.spaces.Discrete(NUM_TARGETS)
    observation_space = gym.spaces.Dict(
        {
            "obs": gym.spaces.Box(0.0, 1.0, (NUM_TARGETS + 1,), np.float32),
            "state": gym.spaces.Box(-1.0, 1.0, (NUM_TARGETS + 3,), np.float32),
        }
    )

    def __init__(self) -> None:
        self.loan: _Loan | None = None
        self.target = 0

    def _obs(self) -> dict[str, np.ndarray]:
        assert self.loan is not None
        h = self.loan.hidden()
        obs = np.concatenate([_one_hot(self.target), h[:1]])
        return {"obs": obs, "state": np.concatenate([_one_hot(self.target), h])}

    def reset(self, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.loan = _Loan(self.np_random)
        self.target = int(self.np_random.integers(NUM_TARGETS))
        return self._obs(), {}

    def step(self, action: Any):
        loan = self.loan
        assert loan is not None
        reward = float(int(action) == self.target) + loan.payment()
        loan.t += 1
        self.target = int(self.np_random.integers(NUM_TARGETS))
        return self._obs(), reward, loan.t >= EPISODE_STEPS, False, {}


class OccludedPayoutDuo:
    """Two agents sharing one state (multi-agent contract of `surge.envs.multi_agent`, auto-reset);
    see the module docstring."""

    num_agents = 2
    is_multiagent = True
    action_space = gym.spaces.Discrete(NUM_TARGETS)
    observation_space = gym.spaces.Dict(
        {
            "obs": gym.spaces.Box(0.0, 1.0, (NUM_TARGETS + 1,), np.float32),
            "state": gym.spaces.Box(-1.0, 1.0, (2 * NUM_TARGETS + 3,), np.float32),
        }
    )

    def __init__(self) -> None:
        self.render_mode = None
        self.rng = np.random.default_rng()
        self._new_episode()

    def _new_episode(self) -> None:
        self.loan = _Loan(self.rng)
        self.targets = [int(x) for x in self.rng.integers(NUM_TARGETS, size=2)]
        self.returns = [0.0, 0.0]

    def _obs(self) -> list[dict[str, np.ndarray]]:
        h = self.loan.hidden()
        state = np.concatenate([_one_hot(self.targets[0]), _one_hot(self.targets[1]), h])
        return [{"obs": np.concatenate([_one_hot(g), h[:1]]), "state": state.copy()} for g in self.targets]

    def reset(self, seed: int | None = None) -> tuple[list, list[dict]]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._new_episode()
        return self._obs(), [{}, {}]

    def step(self, actions: list) -> tuple[list, list[float], list[bool], list[bool], list[dict]]:
        pay = self.loan.payment()
        rewards = [float(int(a) == g) + pay for a, g in zip(actions, self.targets, strict=True)]
        self.returns = [r + x for r, x in zip(self.returns, rewards, strict=True)]
        self.loan.t += 1
        done = self.loan.t >= EPISODE_STEPS
        infos: list[dict] = [{}, {}]
        if done:
            infos = [{"episode": {"r": r, "l": EPISODE_STEPS}} for r in self.returns]
            self._new_episode()
        else:
            self.targets = [int(x) for x in self.rng.integers(NUM_TARGETS, size=2)]
        return self._obs(), rewards, [done, done], [False, False], infos

    def close(self) -> None:
        pass


def _make_single(name: str, cfg: Config, render_mode: str | None = None) -> OccludedPayoutEnv:
    return OccludedPayoutEnv()


def _make_duo(name: str, cfg: Config, render_mode: str | None = None) -> OccludedPayoutDuo:
    return OccludedPayoutDuo()


register_env("occluded_payout", _make_single, default_overrides=OCCLUDED_DEFAULTS)
register_env("occluded_payout_duo", _make_duo, default_overrides=OCCLUDED_DEFAULTS)
