"""rl_games' env API for action masks (issue 21, item 3): an env with `has_action_mask()` True and
`get_action_mask()` (rl_games/common/vecenv.py's interface, read by a2c_common.py's
`get_action_masks` before every step) has its mask fed to the model as the observation's
`action_mask` entry, with no flag: in the spaces a config is checked against, in the serial
placement and in batched sampling. A short serial training run takes no illegal action (the env
raises on one), and its `surge export` file, fed the mask, plays the env legally too."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.cli import main as surge_main
from surge.envs.probe import probe_spaces
from surge.envs.registry import make_env

LENGTH = 8  # cells of the corridor
MAX_STEPS = 40


class MaskedCorridor(gym.Env):
    """A corridor of `LENGTH` cells; the agent starts in cell 0 and the episode ends (reward 1) in
    the last cell, or is truncated after `MAX_STEPS` steps (reward -0.01 per step).

    Actions, Discrete(4): 0 left, 1 right, 2 jump two cells right, 3 wait. The mask (rl_games'
    API: `has_action_mask()` True, `get_action_mask()` a bool `[4]`, 1 = legal) forbids walking
    into the walls (left in cell 0, right and jump at the end, jump from the last-but-one cell)
    and, at every step, one more random action among the rest (a "closed door"), so at least one
    action is always legal and the legal set changes from step to step. `step` raises on an
    illegal action and counts the legal ones it took in `legal_steps` (class-wide).
    """

    observation_space = gym.spaces.Box(0.0, 1.0, (LENGTH + 4,), np.float32)
    action_space = gym.spaces.Discrete(4)
    legal_steps = 0

    def has_action_mask(self) -> bool:
        return True

    def get_action_mask(self) -> np.ndarray:
        return self._mask.copy()

    def _new_mask(self) -> None:
        m = np.ones(4, dtype=bool)
        if self.pos == 0:
            m[0] = False
        if self.pos >= LENGTH - 2:
            m[2] = False
        if self.pos >= LENGTH - 1:
            m[1] = False
        legal = np.flatnonzero(m)
        m[self.np_random.choice(legal)] = False  # the closed door: one of at least two legal ones
        self._mask = m

    def _obs(self) -> np.ndarray:
        o = np.zeros(LENGTH + 4, np.float32)
        o[self.pos] = 1.0
        o[LENGTH:] = self._mask  # the agent sees which doors are open
        return o

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        self._new_mask()
        return self._obs(), {}

    def step(self, action):
        a = int(action)
        if not self._mask[a]:
            raise AssertionError(f"illegal action {a} in cell {self.pos} with mask {self._mask.astype(int)}")
        MaskedCorridor.legal_steps += 1
        self.pos = max(0, min(LENGTH - 1, self.pos + (-1, 1, 2, 0)[a]))
        self.t += 1
        terminated = self.pos == LENGTH - 1
        self._new_mask()
        reward = 1.0 if terminated else -0.01
        return self._obs(), reward, terminated, self.t >= MAX_STEPS, {}


gym.register("MaskedCorridor-v0", entry_point=MaskedCorridor)


def test_the_mask_is_in_the_checked_spaces_and_in_batched_sampling():
    obs_space, _ = probe_spaces("MaskedCorridor-v0")  # what parse_cfg checks a config against
    assert isinstance(obs_space, gym.spaces.Dict) and set(obs_space.spaces) == {"observation", "action_mask"}
    cfg = parse_cfg(["--env=MaskedCorridor-v0", "--batched_sampling=True", "--env_agents=3"])
    env = make_env(cfg)
    try:
        obs, _ = env.reset(seed=0)
        for _ in range(30):
            masks = obs["action_mask"]  # a batched env's observations: arrays [sub-envs, ...]
            assert masks.shape == (3, 4) and ((masks.sum(1) >= 1) & (masks.sum(1) <= 3)).all()
            obs, *_ = env.step(np.array([np.flatnonzero(m)[0] for m in masks]))  # legal: no raise
    finally:
        env.close()


@pytest.mark.slow
def test_serial_training_takes_no_illegal_action(tmp_path):
    MaskedCorridor.legal_steps = 0
    cfg = parse_cfg(
        [
            "--env=MaskedCorridor-v0",
            "--experiment=corridor",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--train_for_env_steps=3000",
            "--use_rnn=False",
            "--encoder_mlp_layers",
            "32",
            "--hidden_size=32",
            "--num_torch_threads=1",
            "--seed=0",
        ]
    )
    assert train(cfg) == "done"  # an illegal action would have raised in the env
    assert MaskedCorridor.legal_steps >= 3000
    # the exported file takes the mask as its `action_mask` input and plays the env legally too
    out = tmp_path / "corridor.onnx"
    argv = ["export", "--experiment=corridor", f"--train_dir={tmp_path}", f"--output={out}", "--check"]
    assert surge_main(argv) == 0
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs", "action_mask"]
    env = MaskedCorridor()
    obs, _ = env.reset(seed=1)
    for _ in range(3 * MAX_STEPS):
        feed = {"obs": obs[None], "action_mask": env.get_action_mask()[None].astype(np.int8)}
        actions = session.run(["actions"], feed)[0]
        obs, _, terminated, truncated, _ = env.step(int(actions[0]))  # raises on an illegal action
        if terminated or truncated:
            obs, _ = env.reset()
