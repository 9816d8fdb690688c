"""Train CartPole-v1 from Python, then play it with the trained policy on a plain gymnasium env.

    python examples/python_api.py [TRAIN_DIR]

Trains 200k env frames with the async placement (2 rollout workers; about a minute on a quiet
4-core machine), then plays 10 episodes with `policy.act` and prints their mean return (500 is
CartPole-v1's maximum). Run it again and training is skipped: the experiment is already done, and
`train` returns it as it is (status "already_done").
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np

from surge import load_policy, train


def main(train_dir: str = "train_dir") -> float:
    """Trains (or finds trained) the experiment `python_api_cartpole` in `train_dir`, plays 10
    episodes with its policy, prints and returns their mean return."""
    run = train(
        env="CartPole-v1",
        experiment="python_api_cartpole",
        train_dir=train_dir,
        train_for_env_steps=200_000,
        num_workers=2,
        num_envs_per_worker=8,
        seed=3,
        # surge's CartPole settings (tests/learning/test_cartpole.py)
        encoder_mlp_layers=[64, 64],
        use_rnn=False,
        with_vtrace=False,
        nonlinearity="tanh",
        batch_size=128,
        num_batches_per_iteration=4,
        ppo_epochs=4,
        learning_rate=3e-4,
        reward_scale=0.1,
        exploration_loss_coeff=0.01,
        decorrelate_experience_max_seconds=0,
    )
    print(
        f"{run.status}: {run.folder} ({run.summary.get('env_frames_per_sec', float('nan')):.0f} env frames/s)"
    )

    policy = load_policy(run.folder)
    env = gym.make("CartPole-v1")
    returns = []
    for episode in range(10):
        obs, _ = env.reset(seed=episode)
        state = policy.initial_state()  # None: this policy has no RNN
        total, done = 0.0, False
        while not done:
            action, state = policy.act(obs, state)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    mean = float(np.mean(returns))
    print(f"mean return over {len(returns)} episodes: {mean:.1f}")
    return mean


if __name__ == "__main__":  # the worker processes import this file again (spawn): train only here
    main(*sys.argv[1:2])
