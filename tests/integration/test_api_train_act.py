"""The Python API end to end (issue 22, item 6): `surge.train` runs short CartPole trainings (serial
and async: the async placement's spawned children start under the API), returns a `Run` or raises
`RunFailed` for a run whose worker crashed, and
`surge.load_policy(run.folder).act` gives the actions and recurrent states of the exported policy
(`ExportablePolicy`, the reference `surge export` writes) for one observation and for a batch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import surge
from surge.errors import ConfigError
from surge.export.load import load_policy as load_exported
from surge.export.policy import ExportablePolicy

SMALL = {
    "num_workers": 1,
    "num_envs_per_worker": 2,
    "seed": 0,
    "hidden_size": 16,
    "encoder_mlp_layers": [16],
    "num_torch_threads": 1,
    "normalize_input": True,
}


def _reference(folder, obs: np.ndarray, state: np.ndarray | None):
    """Actions and next states of the exported module for the batch `obs`."""
    loaded = load_exported(str(folder.parent), folder.name)
    module = ExportablePolicy(loaded.model, loaded.obs_space)
    inputs = [torch.as_tensor(obs)]
    if module.rnn_state_size:
        inputs.append(torch.as_tensor(state))
    with torch.no_grad():
        out = module(*inputs)
    return out[0].numpy(), (out[3].numpy() if module.rnn_state_size else None)


def _observations(n: int) -> np.ndarray:
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=1)
    batch = [obs]
    for _ in range(n - 1):
        obs, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            obs, _ = env.reset()
        batch.append(obs)
    return np.stack(batch).astype(np.float32)


@pytest.mark.slow
def test_serial_run_returns_its_run_and_the_policy_acts_as_the_exported_one(tmp_path):
    run = surge.train(
        env="CartPole-v1",
        experiment="ff",
        train_dir=str(tmp_path),
        serial_mode=True,
        train_for_env_steps=2000,
        **SMALL,
    )
    assert run.status == "done" and run.folder == tmp_path / "ff" and (run.folder / "done").exists()
    assert run.cfg.env == "CartPole-v1" and run.cfg.encoder_mlp_layers == [16]
    assert run.summary["total_env_frames"] >= 2000
    policy = surge.load_policy(run.folder)
    assert policy.initial_state() is None and policy.rnn_state_size == 0
    obs = _observations(6)
    actions, state = policy.act(obs)
    expected, _ = _reference(run.folder, obs, None)
    assert state is None and actions.shape == (6,) and actions.dtype == np.int64
    np.testing.assert_array_equal(actions, expected)
    one, state = policy.act(obs[3])  # one observation: no batch axis
    assert state is None and np.ndim(one) == 0 and int(one) == expected[3]
    assert policy.action_space.contains(int(one))
    # the same call again: the experiment is done, nothing is trained
    assert surge.train(
        env="CartPole-v1", experiment="ff", train_dir=str(tmp_path), serial_mode=True
    ).status == ("already_done")


@pytest.mark.slow
def test_async_run_with_an_rnn_carries_the_recurrent_state(tmp_path):
    run = surge.train(
        env="CartPole-v1",
        experiment="rnn",
        train_dir=str(tmp_path),
        serial_mode=False,
        use_rnn=True,
        train_for_env_steps=3000,
        decorrelate_experience_max_seconds=0,
        set_workers_cpu_affinity=False,
        **SMALL,
    )
    assert run.status == "done"
    policy = surge.load_policy(run.folder)
    assert policy.rnn_state_size > 0
    zeros = policy.initial_state(4)
    assert zeros is not None and zeros.shape == (4, policy.rnn_state_size) and not zeros.any()
    obs = _observations(8)
    # two steps: the second starts from the state the first returned
    a1, s1 = policy.act(obs[:4], None)
    a2, s2 = policy.act(obs[4:], s1)
    r1, rs1 = _reference(run.folder, obs[:4], zeros)
    r2, rs2 = _reference(run.folder, obs[4:], rs1)
    np.testing.assert_array_equal(a1, r1)
    np.testing.assert_array_equal(a2, r2)
    np.testing.assert_allclose(s1, rs1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s2, rs2, rtol=1e-6, atol=1e-6)
    assert not np.allclose(s2, policy.act(obs[4:], zeros)[1])  # the state given was used
    one, state = policy.act(obs[4], s1[0])
    assert int(one) == a2[0] and state is not None and state.shape == (policy.rnn_state_size,)
    np.testing.assert_allclose(state, s2[0], rtol=1e-6, atol=1e-6)


def test_load_policy_of_a_folder_without_a_run_raises(tmp_path):
    with pytest.raises(ConfigError, match="no experiment 'nothing'"):
        surge.load_policy(tmp_path / "nothing")


_CRASHING_SCRIPT = """
import gymnasium as gym
import surge
from surge.envs.registry import register_env


class Boom(gym.Wrapper):
    n = 0

    def step(self, a):
        Boom.n += 1
        if Boom.n > 300:
            raise ValueError("env exploded on purpose")
        return self.env.step(a)


register_env("boom", lambda name, cfg, render_mode=None: Boom(gym.make("CartPole-v1")))
if __name__ == "__main__":
    import sys

    try:
        surge.train(env="boom", experiment="boom", train_dir=sys.argv[1], train_for_env_steps=10**8,
                    use_rnn=False, with_vtrace=False, max_worker_restarts_per_hour=0, num_workers=1,
                    num_envs_per_worker=2, decorrelate_experience_max_seconds=0, set_workers_cpu_affinity=False)
    except surge.errors.RunFailed as e:
        print("RunFailed:", e.run.status, e.run.folder, e)
"""


@pytest.mark.slow
def test_a_crashed_run_raises_run_failed_in_a_users_script(tmp_path):
    # a user's script: the async placement's children (spawn) import it again, and a worker whose
    # env keeps raising is not replaced (--max_worker_restarts_per_hour=0): the run fails
    script = tmp_path / "crash.py"
    script.write_text(_CRASHING_SCRIPT)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=240
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith(f"RunFailed: failed {tmp_path / 'boom'} the training run in"), out.stdout
    assert "env exploded on purpose" in (tmp_path / "boom" / "surge_log.txt").read_text()


@pytest.mark.slow
def test_box_actions_are_mapped_onto_the_action_bounds_as_in_training(tmp_path):
    from surge.sampling.env_actions import BoxActionMap

    run = surge.train(
        env="Pendulum-v1",
        experiment="box",
        train_dir=str(tmp_path),
        serial_mode=True,
        train_for_env_steps=1000,
        rescale_actions=True,  # the policy's [-1, 1] onto the torque's [-2, 2]
        **SMALL,
    )
    policy = surge.load_policy(run.folder)
    space = policy.action_space
    assert isinstance(space, gym.spaces.Box)
    env = gym.make("Pendulum-v1")
    obs = np.stack([env.reset(seed=s)[0] for s in range(5)]).astype(np.float32)
    actions, _ = policy.act(obs)
    raw, _ = _reference(run.folder, obs, None)  # the distribution's mean, before the env's mapping
    mapped = BoxActionMap(space.low, space.high, run.cfg.clip_actions, run.cfg.rescale_actions)(raw)
    np.testing.assert_allclose(actions, mapped, rtol=1e-6)
    assert not np.allclose(actions, raw)  # the mapping did something
    assert actions.shape == (5, 1) and all(space.contains(a) for a in actions)
    sampled = [policy.act(obs[0], deterministic=False)[0] for _ in range(5)]
    assert len({float(a[0]) for a in sampled}) > 1  # sampling, not the mean
