"""`check_env` on good envs and on envs broken in the ways users break them."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from surge.app.check_env import check_env, main
from surge.envs.multi_agent import SingleAgentAsMultiAgent
from surge.errors import ConfigError, EnvError


class GoodEnv(gym.Env):
    """A correct gymnasium env: 3 floats in [-1, 1], 2 actions, episodes of 7 steps.

    The class attributes switch on one mistake each (the subject of the checker is user code)."""

    old_step_api = False
    reset_returns_only_obs = False
    obs_dtype = np.float32
    obs_shape = (3,)
    reward_value = 1.0
    terminated_as_int = False
    ignore_seed = False
    obs_range = 1.0  # > 1: observations outside the space's bounds
    obs_as_list = False

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def _obs(self):
        rng = np.random if self.ignore_seed else self.np_random
        obs = rng.uniform(-self.obs_range, self.obs_range, self.obs_shape).astype(self.obs_dtype)
        return [float(x) for x in obs] if self.obs_as_list else obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        if self.reset_returns_only_obs:
            return self._obs()
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        done = self.t >= 7
        if self.old_step_api:
            return self._obs(), 1.0, done, {}
        terminated = int(done) if self.terminated_as_int else done
        return self._obs(), self.reward_value, terminated, False, {}


def broken(**attrs) -> gym.Env:
    return type("BrokenEnv", (GoodEnv,), attrs)()


def test_good_env_passes():
    assert check_env(GoodEnv()) == []


def test_good_env_passes_inside_surges_multi_agent_wrapper():
    assert check_env(SingleAgentAsMultiAgent(GoodEnv())) == []


@pytest.mark.parametrize(
    "attrs, expected",
    [
        ({"old_step_api": True}, ["returned 4 values", "terminated", "truncated"]),
        ({"reset_returns_only_obs": True}, ["only the observation", "(obs, info)"]),
        ({"obs_dtype": np.float64}, ["dtype float64", "dtype float32"]),
        ({"obs_shape": (4,)}, ["shape (4,)", "shape (3,)"]),
        ({"reward_value": float("nan")}, ["reward", "nan", "finite"]),
        ({"reward_value": np.array([1.0, 2.0])}, ["reward of type ndarray", "one number"]),
        ({"terminated_as_int": True}, ["terminated", "must be a bool"]),
    ],
    ids=[
        "old-4-tuple-step",
        "reset-only-obs",
        "obs-dtype",
        "obs-shape",
        "nan-reward",
        "array-reward",
        "int-flag",
    ],
)
def test_broken_env_raises_env_error_naming_the_problem(attrs, expected):
    with pytest.raises(EnvError) as err:
        check_env(broken(**attrs))
    message = str(err.value)
    for text in expected:
        assert text.lower() in message.lower(), message


def test_unsupported_spaces_are_named():
    env = GoodEnv()
    env.action_space = gym.spaces.Text(5)
    with pytest.raises(EnvError, match="action_space Text"):
        check_env(env)
    env = GoodEnv()
    env.observation_space = gym.spaces.Discrete(4)
    with pytest.raises(EnvError, match="observation_space Discrete.*FlattenObservation"):
        check_env(env)
    env = GoodEnv()
    env.observation_space = None
    with pytest.raises(EnvError, match="no observation_space"):
        check_env(env)


def test_seeding_problems_found_by_gymnasium_are_warnings():
    found = check_env(broken(ignore_seed=True))
    assert any("gymnasium" in w and "determinis" in w for w in found), found


def test_not_a_gymnasium_env_is_explained():
    class OldStyle:
        def reset(self):
            return 0

    with pytest.raises(EnvError, match="neither a gymnasium.Env nor a multi-agent env"):
        check_env(OldStyle())


class MultiAgentEnv:
    """num_agents agents with GoodEnv's spaces; `wrong_rewards` returns one reward too few."""

    def __init__(self, num_agents=2, wrong_rewards=False):
        self.num_agents = num_agents
        self.wrong_rewards = wrong_rewards
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def _obs(self):
        return [np.zeros(3, np.float32) for _ in range(self.num_agents)]

    def reset(self, seed=None):
        return self._obs(), [{} for _ in range(self.num_agents)]

    def step(self, actions):
        n = self.num_agents
        rewards = [0.0] * (n - 1 if self.wrong_rewards else n)
        return self._obs(), rewards, [False] * n, [False] * n, [{} for _ in range(n)]


def test_multi_agent_env_passes_and_wrong_list_length_is_named():
    assert check_env(MultiAgentEnv()) == []
    with pytest.raises(EnvError, match="returned 1 rewards but num_agents is 2"):
        check_env(MultiAgentEnv(wrong_rewards=True))
    with pytest.raises(EnvError, match="num_agents"):
        check_env(MultiAgentEnv(num_agents=0))


def test_batched_families_pass_with_their_batched_info():
    """A batched family (`is_batched`: EnvPool's, gymnasium's vector env) returns one BatchedInfo a
    step, not a list of infos: check-env refused every one of them before."""
    pytest.importorskip("envpool")
    assert isinstance(check_env("envpool_breakout", num_steps=20), list)
    assert isinstance(check_env("envpool_dmc_cartpole_balance", num_steps=20), list)


def test_a_batched_info_of_the_wrong_size_is_named():
    from surge.envs.batched import BatchedInfo

    class Batched(MultiAgentEnv):
        is_batched = True

        def step(self, actions):
            o, r, te, tr, _ = super().step(actions)
            return o, r, te, tr, BatchedInfo(inactive=np.zeros(self.num_agents + 1, bool))

    with pytest.raises(EnvError, match=r"BatchedInfo whose inactive has shape \(3,\).*\[2\] bools"):
        check_env(Batched())


def test_env_names_are_made_and_checked():
    assert isinstance(check_env("CartPole-v1", num_steps=20), list)
    with pytest.raises(ConfigError):
        check_env("NoSuchEnv-v0")


def test_cli_prints_ok_or_the_error(capsys):
    assert main(["--env=cartpole", "--num_steps=10"]) == 0
    assert capsys.readouterr().out.startswith("OK")
    assert main(["--env=NoSuchEnv-v0"]) == 1
    assert "unknown env" in capsys.readouterr().err
    assert main(["--env=cartpole", "--no_such_field=1"]) == 1


@pytest.mark.parametrize(
    "attrs, expected",
    [
        ({"old_step_api": True}, "returned 4 values"),
        ({"reset_returns_only_obs": True}, "only the observation"),
    ],
)
def test_old_api_is_explained_through_gym_make_wrappers(attrs, expected):
    """gym.make adds wrappers that unpack 5 values; the message must still name the old API."""
    env_id = "SurgeTestBrokenEnv-v0"
    gym.register(env_id, entry_point=lambda **kwargs: broken(**attrs))
    try:
        with pytest.raises(EnvError, match=expected):
            check_env(env_id)
    finally:
        gym.registry.pop(env_id)


@pytest.mark.parametrize(
    "attrs, problem",
    [
        ({"obs_range": 3.0}, "outside the bounds of observation_space"),
        ({"obs_as_list": True}, "is a list, not a numpy array"),
    ],
    ids=["out-of-bounds", "plain-list"],
)
def test_a_problem_training_tolerates_passes_with_one_counted_warning(capsys, attrs, problem):
    """Observations out of bounds or given as lists train (surge reads neither the bounds nor the
    type): check-env passes and names each such problem once, with a count, in place of one warning
    per step and gymnasium's warnings (or, at reset, its failed assertion) of the same problem."""
    env_id = "SurgeTestTolerableEnv-v0"
    gym.register(env_id, entry_point=lambda **kwargs: broken(**attrs))
    try:
        assert main([f"--env={env_id}", "--num_steps=30"]) == 0
    finally:
        gym.registry.pop(env_id)
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, out
    assert problem in warnings[0] and re.search(r"seen \d+ times, first at env\.reset", warnings[0]), out
    assert out.startswith("OK") and "1 warning" in out.splitlines()[0], out


def test_the_module_entry_knows_every_built_in_family():
    # `python -m surge.app.check_env` in a fresh interpreter: nothing but the module itself has
    # registered the families, so a family of surge/app/builtins.py (memory_cue) must be known
    import subprocess
    import sys
    from pathlib import Path

    out = subprocess.run(
        [sys.executable, "-m", "surge.app.check_env", "--env=memory_cue", "--num_steps=5"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("OK: env 'memory_cue' passed"), out.stdout


def test_the_command_refuses_what_training_refuses_once_the_spaces_are_known(capsys):
    # the action options (learning) are checked against the env's action space as `surge train`
    # checks them (surge.runtime.env_checks): CartPole's actions are Discrete
    assert main(["--env=cartpole", "--rescale_actions=True", "--num_steps=5"]) == 1
    assert "rescale_actions" in capsys.readouterr().err
