"""Train surge on your own gymnasium env and your own encoder.

    python examples/train_custom_env.py --experiment=custom --train_for_env_steps=20000

The env family `corridor_` is registered with an extra parameter (`--corridor_length`) and its own
defaults; the encoder `corridor_mlp` is registered and selected with `--encoder_custom`.
Registration happens at import time, so the worker processes of the async placement (started with
`spawn`, which imports this module again) know the family too: pass `--serial_mode=False` to try.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from torch import nn

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.cfg import family_params, param
from surge.envs.registry import register_env_family
from surge.models import Encoder, register_encoder


class Corridor(gym.Env):
    """Walk right to the end of a corridor: reward 1 at the end, -0.01 per step, 100-step limit."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int):
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (length,), np.float32)
        self.pos = 0
        self.t = 0

    def _obs(self) -> np.ndarray:
        o = np.zeros(self.length, np.float32)
        o[self.pos] = 1.0
        return o

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.pos = min(self.length - 1, max(0, self.pos + (1 if action == 1 else -1)))
        at_end = self.pos == self.length - 1
        return self._obs(), (1.0 if at_end else -0.01), at_end, self.t >= 100, {}


@dataclass
class CorridorParams:
    corridor_length: int = param(8, "Cells in the corridor.")


class CorridorEncoder(Encoder):
    """A one-layer MLP: obs [B, length] -> [B, 32]."""

    def __init__(self, cfg, obs_space):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_space.shape[0], 32), nn.Tanh())
        self.out_size = 32

    def forward(self, obs):
        return self.net(obs.float())


def register() -> None:
    register_env_family(
        "corridor_",
        lambda name, cfg, render_mode=None: Corridor(family_params(cfg, CorridorParams).corridor_length),
        extra_params=CorridorParams,
        default_overrides={
            "use_rnn": False,
            "recurrence": 1,
            "with_vtrace": False,
            "batch_size": 256,
            "rollout": 32,
            "num_envs_per_worker": 4,
            "learning_rate": 1e-3,
        },
    )
    register_encoder("corridor_mlp", CorridorEncoder)


register()


def main(argv: list[str]) -> int:
    cfg = parse_cfg(["--env=corridor_basic", "--encoder_custom=corridor_mlp", "--serial_mode=True", *argv])
    train(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
