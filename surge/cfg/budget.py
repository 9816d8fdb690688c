"""The training budget when `--train_for_env_steps` is not given.

`Config.train_for_env_steps` is Sample Factory's 10^10 env frames: no end in practice, so the
progress line has no % and no ETA. An env no family claims (a plain gymnasium id) gets a budget
chosen by its observation space, as its other defaults are (`surge.cfg.space_defaults`): 1M env
steps for vector observations, 10M env frames for images; an algorithm may choose its own
(`Algorithm.space_defaults`: DQN's 100k). An env family keeps Sample Factory's unbounded default
(Atari and Doom runs are long and their length is the user's choice), and a run without an end says
so once at its start (`no_end_note`). `--train_for_env_steps` (YAML or the command line) always
wins, and so does a given `--train_for_seconds`: no step budget is chosen then.
"""

from __future__ import annotations

import gymnasium as gym

from surge.cfg.config import Config
from surge.cfg.space_defaults import SpaceDefault, is_vector_observation

#: `Config.train_for_env_steps` and `train_for_seconds` default (Sample Factory's): no limit
NO_BUDGET = int(1e10)
#: vector observations: CleanRL's ppo_continuous_action.py default and rl-zoo3's LunarLander and
#: MuJoCo budgets; PPO's defaults solve CartPole-v1 by 300k (docs/defaults.md)
VECTOR_BUDGET = 1_000_000
#: image observations: CleanRL's ppo_atari.py and rl-zoo3's Atari budget
IMAGE_BUDGET = 10_000_000


def budget_default(observation_space: gym.Space) -> SpaceDefault:
    """The `train_for_env_steps` chosen by the observation space (module docstring), with its
    reason for the run's log."""
    if is_vector_observation(observation_space):
        return SpaceDefault(
            "train_for_env_steps",
            VECTOR_BUDGET,
            "vector observation: 1M env steps, the budget CleanRL and rl-zoo3 give classic-control and "
            "MuJoCo tasks (no budget would run 10^10 frames); pass --train_for_env_steps to change it",
        )
    return SpaceDefault(
        "train_for_env_steps",
        IMAGE_BUDGET,
        "image observation: 10M env frames, the budget CleanRL and rl-zoo3 give Atari (no budget would "
        "run 10^10 frames); pass --train_for_env_steps to change it",
    )


def no_end_note(cfg: Config) -> str | None:
    """The log line of a run with neither an env-step nor a time budget (an env family's run
    without `--train_for_env_steps`), or None when the run has an end."""
    if cfg.train_for_env_steps < NO_BUDGET or cfg.train_for_seconds < NO_BUDGET:
        return None
    return (
        f"--train_for_env_steps is not set: this run has no end ({NO_BUDGET:.0e} env frames, Sample "
        "Factory's default), so its progress shows no % and no ETA. Stop it with Ctrl+C (a checkpoint "
        "is saved and the run resumes from it), or pass --train_for_env_steps=N or --train_for_seconds=S."
    )


#: `--benchmark`'s ends, Sample Factory 1's (appo.py `_should_end_training`): env frames since the
#: run's start or resume, and samples acted on (its policy workers' count: agent steps)
BENCHMARK_ENV_FRAMES = 2_000_000
BENCHMARK_SAMPLES = 1_000_000


def benchmark_end(cfg: Config, frames_since_start: int, agent_steps: int) -> str | None:
    """With `--benchmark=True`, the log line of a run that reached one of Sample Factory's benchmark
    ends (`BENCHMARK_ENV_FRAMES` env frames since its start or resume, `BENCHMARK_SAMPLES` agent
    steps acted on); None without `--benchmark` or before either."""
    if not cfg.benchmark:
        return None
    if frames_since_start >= BENCHMARK_ENV_FRAMES or agent_steps >= BENCHMARK_SAMPLES:
        return (
            f"Stopping: --benchmark=True ends a run after {BENCHMARK_ENV_FRAMES} env frames since its "
            f"start or {BENCHMARK_SAMPLES} agent steps acted on (Sample Factory's benchmark mode); "
            f"this one sampled {frames_since_start} env frames and {agent_steps} agent steps."
        )
    return None
