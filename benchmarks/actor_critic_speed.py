"""CPU time of the default ActorCritic's `act` and `evaluate` (one torch thread), for comparing two
checkouts: run it from each and compare the figures (min over repeats of process CPU time, so other
processes on a busy machine disturb it less than wall time).

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/actor_critic_speed.py
"""

from __future__ import annotations

import time
import timeit

import gymnasium as gym
import torch

from surge.cfg.config import Config
from surge.models.actor_critic import ActorCritic


def _time_us(fn, number: int, repeat: int = 7) -> float:
    fn()
    return min(timeit.repeat(fn, timer=time.process_time, number=number, repeat=repeat)) / number * 1e6


def run(name: str, obs_space: gym.Space, action_space: gym.Space, B: int, T: int, **overrides) -> None:
    cfg = Config()
    for k, v in overrides.items():
        setattr(cfg, k, v)
    torch.manual_seed(0)
    obs_space.seed(0)
    model = ActorCritic(cfg, obs_space, action_space)
    sample = torch.as_tensor(obs_space.sample())
    obs = sample.expand(B, *sample.shape).contiguous()
    states = torch.zeros(B, model.rnn_state_size)
    t_obs = sample.expand(T, B, *sample.shape).contiguous()
    t_states, dones = torch.zeros(T, B, model.rnn_state_size), torch.zeros(T, B)
    act = _time_us(lambda: model.act(obs, states), 200)
    evaluate = _time_us(lambda: model.evaluate(t_obs, t_states, dones, T), 10)
    print(f"{name}: act {act:.0f} us (B={B}), evaluate {evaluate:.0f} us (T={T}, B={B})")


if __name__ == "__main__":
    torch.set_num_threads(1)
    vec, box = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Box(-1, 1, (17,))
    run("mlp+gru cartpole", vec, gym.spaces.Discrete(2), 64, 32, encoder_mlp_layers=[64, 64], hidden_size=64)
    run(
        "mlp ff gaussian",
        box,
        gym.spaces.Box(-1, 1, (6,)),
        64,
        32,
        encoder_mlp_layers=[256, 256],
        use_rnn=False,
    )
    atari = gym.spaces.Box(0, 255, (4, 84, 84), dtype="uint8")
    run("conv+gru atari", atari, gym.spaces.Discrete(6), 32, 8)
