"""Learning test of `--use_prev_action_reward`: a task that only the previous reward solves.

`last_reward_tells` (defined here): two actions; at each of an episode's 10 steps one pays +1 and
the other -1, and which one pays is told by the previous step's reward: action 1 after a +1,
action 0 after a -1 (at the first step, drawn at random). The observation is a constant, so it
says nothing. A policy that reads the previous reward earns 9 on average (the first step is a
coin toss); any policy that does not earns 0 (chance): flipping the first step's draw flips the
sign of every later reward of a fixed action sequence. The same GRU policy, the same budget,
with and without the flag. The return checked is that of the last training episodes as the
sampler played them, so a model that is fed zeros instead of the two inputs fails.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun
from surge.envs.registry import register_env

EPISODE = 10


class LastRewardTells(gym.Env):
    """Two actions; the paying one (+1, the other -1) is 1 after a +1, 0 after a -1, drawn at
    the first step; `EPISODE` steps; the observation is always `[0.0]` float32."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.paying, self.t = int(self.np_random.integers(2)), 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        right = int(action) == self.paying
        self.paying = 1 if right else 0
        return np.zeros(1, np.float32), 1.0 if right else -1.0, False, self.t >= EPISODE, {}


register_env("last_reward_tells", lambda name, cfg, render_mode=None: LastRewardTells())

# fmt: off
# rollout = recurrence = episode length and no decorrelation: each trajectory is one episode
HYPERPARAMS = [
    "--env=last_reward_tells", "--experiment=prev", "--serial_mode=True", f"--rollout={EPISODE}",
    f"--recurrence={EPISODE}", "--decorrelate_envs_on_one_worker=False", "--num_workers=2",
    "--num_envs_per_worker=16", f"--batch_size={32 * EPISODE}", "--ppo_epochs=2",
    "--learning_rate=0.003", "--hidden_size=32", "--encoder_mlp_layers", "32", "--use_rnn=True",
    "--train_for_env_steps=150000", "--num_torch_threads=1", "--stats_avg=200", "--seed=1",
    "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
]
# fmt: on


def _train(tmp_path, flag: bool) -> float:
    """Trains and returns the mean return of the last 200 training episodes."""
    cfg = parse_cfg([f"--train_dir={tmp_path}", *HYPERPARAMS, f"--use_prev_action_reward={flag}"])
    run = TrainingRun(cfg)
    assert run.run() == "done"
    return run.monitor.mean_return()


@pytest.mark.slow
def test_the_previous_reward_is_learned_from_with_the_flag(tmp_path):
    mean = _train(tmp_path, True)
    assert mean >= 6.0, mean  # 9 at best, 0 at chance


@pytest.mark.slow
def test_without_the_flag_the_policy_stays_at_chance(tmp_path):
    mean = _train(tmp_path, False)
    # 200 episodes of 10 steps of ±1 at chance: standard error 0.22; 1.5 is over 6 of them
    assert abs(mean) < 1.5, mean
