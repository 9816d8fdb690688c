"""One DQN hyper-parameter set in both spellings, for the side-by-side scripts
(`dqn_vs_sb3.py`: CartPole-v1, `dqn_atari_vs_sb3.py`: Atari): Stable-Baselines3's `DQN(...)`
keyword arguments and surge's flags, and what a finished surge run's checkpoint says it did.

A set is a dict with Stable-Baselines3's names: learning_rate, batch_size, buffer_size,
learning_starts (env steps), target_update_interval (env steps), train_freq (env steps per env
between training phases), gradient_steps, exploration_fraction, exploration_final_eps, and
optionally gamma, max_grad_norm, net (hidden sizes of the MLP Q-network).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SHARED = (
    "learning_rate",
    "batch_size",
    "buffer_size",
    "learning_starts",
    "target_update_interval",
    "train_freq",
    "gradient_steps",
    "exploration_fraction",
    "exploration_final_eps",
)


def sb3_kwargs(z: dict[str, Any]) -> dict[str, Any]:
    """`DQN(...)` keyword arguments of the set `z`."""
    kw = {k: z[k] for k in SHARED}
    kw.update({k: z[k] for k in ("gamma", "max_grad_norm") if k in z})
    if "net" in z:
        kw["policy_kwargs"] = {"net_arch": z["net"]}
    return kw


def surge_flags(z: dict[str, Any], n_envs: int) -> list[str]:
    """surge's flags for the set `z` with `n_envs` envs in all: the replay ratio is SB3's
    gradient_steps / (train_freq * n_envs) updates per env step."""
    flags = [
        "--algo=DQN",
        f"--learning_rate={z['learning_rate']}",
        "--lr_schedule=constant",  # SB3's DQN; spelled out, since a family may default to a decay
        f"--batch_size={z['batch_size']}",
        f"--replay_size={z['buffer_size']}",
        f"--learning_starts={z['learning_starts']}",
        f"--target_update_interval={z['target_update_interval']}",
        f"--replay_ratio={z['gradient_steps'] / (z['train_freq'] * n_envs)}",
        f"--exploration_fraction={z['exploration_fraction']}",
        f"--exploration_final_eps={z['exploration_final_eps']}",
    ]
    flags += [f"--{k}={z[k]}" for k in ("gamma", "max_grad_norm") if k in z]
    if "net" in z:
        flags += ["--encoder_mlp_layers", *[str(n) for n in z["net"]]]
    return flags


def surge_counters(experiment_dir: Path) -> dict[str, int]:
    """env_frames, env_steps and updates of the run's latest checkpoint (policy 0)."""
    import torch

    ckpt = sorted((experiment_dir / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    state = torch.load(ckpt, weights_only=True)
    return {
        "env_frames": int(state["env_frames"]),
        "env_steps": int(state["env_steps"]),
        "updates": int(state["learner"]["replay_counters"]["updates"]),
    }
