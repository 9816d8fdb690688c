"""Learning tests of the defaults chosen by an env's spaces (surge.cfg.space_defaults): plain
gymnasium ids, with no tuning flag, learn out of the box in the serial placement.

Only the placement (`--serial_mode=True`, `--num_workers=2`, so the number of envs does not depend
on the machine's cores), the frame budget and the seed are given (each run also stops once its training
mean is past the bar, `--score_to_win`, which tunes nothing: CI time). With Sample Factory's Doom/Atari
defaults (conv-sized MLP of 512, 512-unit GRU, lr 1e-4, V-trace, rewards clipped at ±10)
CartPole-v1 reached a mean training return of 45.5 after 300k frames (the issue: 38.6),
Pendulum-v1 was at -1281 after 153k frames, LunarLander-v3 at -213 after 100k and the memory task
at chance (-0.08); the figures with the chosen defaults are in docs/defaults.md."""

import gymnasium as gym
import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun
from surge.enjoy import enjoy
from tests.play_checkpoint import CARTPOLE_SOLVED_EPISODES

PLACEMENT = ["--serial_mode=True", "--num_workers=2"]


def _train(tmp_path, env: str, frames: int, seed: int, *extra: str) -> float:
    """Trains `env` with its chosen defaults; returns the mean return of the last 100 training
    episodes (as the sampler played them)."""
    cfg = parse_cfg(
        [
            f"--env={env}",
            "--experiment=run",
            f"--train_dir={tmp_path}",
            f"--train_for_env_steps={frames}",
            f"--seed={seed}",
            *PLACEMENT,
            *extra,
        ]
    )
    run = TrainingRun(cfg)
    assert run.run() == "done"
    return run.monitor.mean_return()


@pytest.mark.slow
def test_cartpole_v1_learns_with_the_defaults_its_spaces_choose(tmp_path):
    # stops once the last 100 training episodes average >= 475 (CI time: a CI run got there at 183k)
    mean = _train(tmp_path, "CartPole-v1", 300_000, 1, "--score_to_win=475")
    ev = parse_cfg(
        [
            "--env=CartPole-v1",
            "--experiment=run",
            f"--train_dir={tmp_path}",
            f"--max_num_episodes={CARTPOLE_SOLVED_EPISODES}",
            "--no_render=True",
            "--eval_deterministic=True",
        ],
        evaluation=True,
    )
    returns = enjoy(ev)["returns"]
    print(f"CartPole-v1: training mean {mean:.1f}, deterministic evaluation {np.mean(returns):.1f}")
    # the maximum is 500; the old defaults reached 38.6 (training) and 57.6 (enjoy, at 500k frames)
    assert mean >= 400, mean
    assert np.mean(returns) >= 475, returns


@pytest.mark.slow
def test_pendulum_v1_learns_with_the_defaults_its_spaces_choose(tmp_path):
    # stops once the last 100 training episodes average >= -400 (CI time: a CI run passed -370 at 110k
    # of its 200k frames); that is above the -600 asserted, so a run that stops passes
    mean = _train(tmp_path, "Pendulum-v1", 200_000, 1, "--score_to_win=-400")
    print(f"Pendulum-v1: training mean {mean:.1f}")
    # A random policy averages -1206 (100 episodes, standard error 28); episodes of 200 steps cost
    # between 0 and -16.3 per step; the run measured for docs/defaults.md averaged -188.
    assert mean > -600, mean


@pytest.mark.slow
def test_lunar_lander_v3_improves_with_the_defaults_its_spaces_choose(tmp_path):
    pytest.importorskip("Box2D", reason='LunarLander needs pip install -e ".[box2d]"')
    # stops once the last 100 training episodes average >= -100 (CI time: a CI run was at -90 after 25k
    # of its 100k frames); that is above the -120 asserted, so a run that stops passes
    mean = _train(tmp_path, "LunarLander-v3", 100_000, 1, "--score_to_win=-100")
    print(f"LunarLander-v3: training mean {mean:.1f}")
    # A random policy averages -192 (100 episodes, standard error 11); the old defaults went from
    # -169 to -262 over the same 100k frames. Solving (200) takes about 1M frames.
    assert mean > -120, mean


@pytest.mark.slow
def test_a_memory_task_registered_with_gymnasium_learns_with_use_rnn_alone(tmp_path):
    """surge's memory_cue task (cue at the first step, query after 5 blank steps, return ±1,
    chance 0) registered as a plain gymnasium id: `--use_rnn=True` is the only flag; the chosen
    64-unit GRU back-propagates through whole rollouts. With Sample Factory's defaults (a 512-unit
    GRU at lr 1e-4, V-trace) it stayed near chance on this budget."""
    gym.register("SurgeTestCueMemory-v0", entry_point="surge.envs.memory:CueMemoryEnv")
    try:
        # stops at a training mean of 0.9 (CI time: a CI run was at 0.96 after 18k of its 40k frames)
        mean = _train(tmp_path, "SurgeTestCueMemory-v0", 40_000, 1, "--use_rnn=True", "--score_to_win=0.9")
    finally:
        gym.registry.pop("SurgeTestCueMemory-v0")
    print(f"memory task as a gymnasium id: training mean {mean:.2f}")
    assert mean >= 0.8, mean  # right 90% of the time; a feed-forward policy averages 0
