"""The defaults DQN, R2D2, SAC, TD3 and DDPG choose by the env's spaces (`Algorithm.space_defaults`)
for an env no family claims (a plain gymnasium id), each with the reason its run logs.

Their general defaults are sized for Atari (DQN: Stable-Baselines3's, a 1M replay, a target update
every 10k steps; R2D2: Kapturowski et al. 2019's, an LSTM trained on 64 sequences of 40 + 80 steps).
On a small vector env those crawl or do not learn in a short run: R2D2 ran at about 26 env frames/s,
and DQN's defaults played CartPole-v1 to 157-211 in 100k env steps. Image observations keep them;
vector observations get the settings below (docs/defaults.md, "Replay algorithms").
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from surge.cfg.space_defaults import SpaceDefault, is_vector_observation

#: the small-env reasons' common head
_DQN = "DQN on a vector observation"
_ZOO = f"{_DQN}: rl-zoo3's CartPole-v1 DQN"
_R2D2 = "R2D2 on a vector observation"
_QPG = "vector observation"


def _no_clip(algo: str) -> SpaceDefault:
    return SpaceDefault(
        "reward_clip",
        1000.0,
        f"{algo}: rewards are not clipped at ±10, an Atari/Doom convention that would cut "
        "LunarLander's ±100 and Pendulum's -16",
    )


def dqn_space_defaults(obs: gym.Space, action: gym.Space, given: dict[str, Any]) -> list[SpaceDefault]:
    """DQN's defaults for vector observations: rl-zoo3's CartPole-v1 DQN with the learning test's
    three changes that keep the final policy stable (a target update every 1000 env steps, double
    DQN, the learning rate decayed to 0; tests/learning/test_dqn.py), and its 32 sampled
    transitions per env step taken as 64 minibatches of 128 per 256 env steps instead of 128 of
    64: the updates, which set the run's time, are halved (seeds 1-3 played 500 after 100k env
    steps, 54-69 s each; docs/defaults.md). [] for images (the Atari-sized defaults stay)."""
    if not is_vector_observation(obs):
        return []
    return [
        SpaceDefault("encoder_type", "mlp", f"{_DQN}: the Q-network's MLP encoder"),
        SpaceDefault("encoder_subtype", "mlp", f"{_DQN}: the Q-network's MLP encoder"),
        SpaceDefault(
            "recurrence", 1, f"{_DQN}: a feed-forward Q-network, so any --rollout is whole chunks of one step"
        ),
        SpaceDefault("learning_rate", 2.3e-3, f"{_ZOO}'s Adam lr 2.3e-3; 1e-4 is SB3's Atari rate"),
        SpaceDefault(
            "lr_schedule",
            "linear_decay",
            f"{_DQN}: the rate decays linearly to 0, so the final policy does not drift off its plateau",
        ),
        SpaceDefault(
            "batch_size",
            128,
            f"{_DQN}: minibatches of 128 at --replay_ratio=0.25, the 32 sampled transitions per env step "
            "of rl-zoo3's CartPole-v1 DQN (64 at 0.5) in half the updates",
        ),
        SpaceDefault("encoder_mlp_layers", [256, 256], f"{_ZOO}'s two hidden layers of 256"),
        SpaceDefault(
            "num_workers",
            1,
            f"{_DQN}: one worker of 8 envs and 32-step rollouts, blocks of 256 env steps as rl-zoo3's "
            "train_freq for CartPole-v1",
        ),
        SpaceDefault("num_envs_per_worker", 8, f"{_DQN}: 8 envs per worker"),
        SpaceDefault("worker_num_splits", 1, f"{_DQN}: one split, so each block is all 8 envs' rollouts"),
        _no_clip(_DQN),
        SpaceDefault("replay_size", 100_000, f"{_ZOO}'s replay of 100k transitions"),
        SpaceDefault(
            "replay_ratio",
            0.25,
            f"{_DQN}: 64 updates of 128 per 256 env steps, as many samples as rl-zoo3's 128 of 64 in half "
            "the time",
        ),
        SpaceDefault(
            "target_update_interval",
            1000,
            f"{_DQN}: a target update every 1000 env steps (10k is sized for Atari)",
        ),
        SpaceDefault("double_dqn", True, f"{_DQN}: the double-Q target keeps the final policy stable"),
        SpaceDefault("exploration_fraction", 0.16, f"{_ZOO}'s epsilon decay over 16% of the budget"),
        SpaceDefault("exploration_final_eps", 0.04, f"{_ZOO}'s final epsilon 0.04"),
        SpaceDefault(
            "train_for_env_steps",
            100_000,
            f"{_DQN}: 100k env steps, rl-zoo3's classic-control DQN budgets (50k-120k); "
            "pass --train_for_env_steps to change it",
        ),
    ]


def r2d2_space_defaults(obs: gym.Space, action: gym.Space, given: dict[str, Any]) -> list[SpaceDefault]:
    """R2D2's defaults for vector observations: the small recipe of docs/algorithms.md (a 32-unit
    GRU, short sequences, a small replay) in place of the paper's Atari sizes. [] for images."""
    if not is_vector_observation(obs):
        return []
    return [
        SpaceDefault("encoder_type", "mlp", f"{_R2D2}: the Q-network's MLP encoder"),
        SpaceDefault("encoder_subtype", "mlp", f"{_R2D2}: the Q-network's MLP encoder"),
        SpaceDefault("encoder_mlp_layers", [32], f"{_R2D2}: one hidden layer of 32 before the core"),
        SpaceDefault("rnn_type", "gru", f"{_R2D2}: a GRU core, cheaper than the paper's LSTM"),
        SpaceDefault("hidden_size", 32, f"{_R2D2}: a 32-unit core; 512 is sized for Atari"),
        SpaceDefault("num_envs_per_worker", 16, f"{_R2D2}: 16 envs per worker, 16 actors' epsilons each"),
        SpaceDefault("batch_size", 32, f"{_R2D2}: minibatches of 32 sequences"),
        SpaceDefault("learning_rate", 3e-3, f"{_R2D2}: Adam lr 3e-3 for a small network"),
        SpaceDefault(
            "adam_eps",
            1e-8,
            f"{_R2D2}: Adam epsilon 1e-8; the paper's 1e-3 is of the order of a small network's gradients",
        ),
        SpaceDefault("gamma", 0.99, f"{_R2D2}: discount 0.99; 0.997 is the paper's for Atari"),
        _no_clip(_R2D2),
        SpaceDefault("burn_in", 4, f"{_R2D2}: a 4-step burn-in; 40 is sized for Atari"),
        SpaceDefault("sequence_length", 16, f"{_R2D2}: 16-step sequences; 80 is sized for Atari"),
        SpaceDefault(
            "store_rnn_state_interval",
            8,
            f"{_R2D2}: a sequence starts every 8 steps (half overlap, as the paper's)",
        ),
        SpaceDefault("replay_size", 20_000, f"{_R2D2}: a replay of 20k steps"),
        SpaceDefault("learning_starts", 500, f"{_R2D2}: learning starts after 500 env steps"),
        SpaceDefault("replay_ratio", 0.15, f"{_R2D2}: 0.15 updates per env step"),
        SpaceDefault("target_update_interval", 500, f"{_R2D2}: a target update every 500 env steps"),
        SpaceDefault(
            "train_for_env_steps",
            100_000,
            f"{_R2D2}: 100k env steps, as DQN's; pass --train_for_env_steps to change it",
        ),
    ]


def qpg_space_defaults(obs: gym.Space, action: gym.Space, given: dict[str, Any]) -> list[SpaceDefault]:
    """SAC's, TD3's and DDPG's defaults for vector observations: 8 envs per worker and unclipped
    rewards; their networks are their own (`--net_arch`), a plain vector is only flattened before
    them, a Dict's vectors go through the MLP encoder. [] for images."""
    if not is_vector_observation(obs):
        return []
    out = [
        SpaceDefault(
            "num_envs_per_worker",
            8,
            f"{_QPG}: 8 envs per worker, each block of --rollout=8 steps brings 64 transitions per worker",
        ),
        _no_clip(_QPG),
    ]
    if isinstance(obs, gym.spaces.Dict):  # the encoder the policy-gradient rules gave it, kept
        why = "a Dict of vectors: its entries go through the MLP encoder before --net_arch"
        out += [
            SpaceDefault("encoder_type", "mlp", why),
            SpaceDefault("encoder_subtype", "mlp", why),
            SpaceDefault("encoder_mlp_layers", [64, 64], f"{why}, two layers of 64"),
            SpaceDefault("nonlinearity", "tanh", f"{why}, tanh activations"),
        ]
    return out
