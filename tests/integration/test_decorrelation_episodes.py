"""The episode statistics hold only episodes the policy played from their first step (issue 14,
defect 7): the decorrelation's random actions at a reset (a new run, or a resume whose env state
could not be saved) are not the policy's, and an episode they began was reported as if it were
(Breakout: lives lost to random play in the first games after every resume)."""

import gymnasium as gym
import numpy as np

from surge.app.resolve import parse_cfg
from surge.runtime.components import build_components

EPISODE = 10  # env steps


class RewardsActionZero(gym.Env):
    """Reward 1 for action 0, else 0; every episode lasts `EPISODE` steps. A policy that always
    plays 0 scores exactly `EPISODE` per episode."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), float(action == 0), False, self.t >= EPISODE, {}


gym.register("RewardsActionZero-v0", entry_point=RewardsActionZero)


def test_episodes_begun_by_the_decorrelation_random_actions_are_not_reported():
    cfg = parse_cfg(
        [
            "--env=RewardsActionZero-v0",
            "--sampler_only=True",
            "--num_workers=1",
            "--num_envs_per_worker=8",
            "--rollout=32",
            "--decorrelate_envs_on_one_worker=True",
            "--seed=3",
        ]
    )
    c = build_components(cfg)
    try:
        (worker,) = c.workers
        worker.reset()  # each env first takes 0..31 random actions
        for _ in range(3 * EPISODE):  # the policy: always action 0
            for s in range(len(worker.splits)):
                slots, t = worker.policy_request(s)
                c.buffers.actions[slots, t] = 0
                finished = worker.advance(s)
                if finished is not None:
                    worker.hand_over(s, finished)
                    assert worker.start_next_rollout(s)
        returns = [ep.episode_return for ep in worker.pop_episodes()]
    finally:
        c.close()
    # 8 envs x 3 episodes' worth of steps: 2 whole policy episodes each at least
    assert len(returns) >= 16
    assert returns == [float(EPISODE)] * len(returns)  # before: 1.0, 3.0, 5.0, ... among them
