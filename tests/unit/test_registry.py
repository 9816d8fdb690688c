"""Env registry: families by prefix, exact names, gymnasium ids, multi-agent wrapping."""

import importlib.util
import re
import sys

import gymnasium as gym
import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.envs.registry import find_family, make_env, register_env_family
from surge.errors import ConfigError


def test_builtin_families_and_gym_ids_resolve():
    assert find_family("atari_breakout").prefix == "atari_"
    assert find_family("cartpole").exact
    assert find_family("Acrobot-v1").prefix == ""  # plain gymnasium id


def test_unknown_env_suggests_close_names():
    with pytest.raises(ConfigError, match="CartPole-v1"):
        find_family("CartPole-v2x")


class _Counter(gym.Env):
    observation_space = gym.spaces.Box(0, 100, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, horizon):
        self.horizon, self.t = horizon, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], np.float32), 1.0, self.t >= self.horizon, False, {}


def test_a_minigrid_id_is_refused_with_the_module_form_that_makes_it(monkeypatch):
    if importlib.util.find_spec("minigrid") is None:  # not imported here: that registers its ids
        pytest.skip("minigrid is not installed")
    import gymnasium as gym

    # a test run earlier in this process may have imported minigrid, registering its ids: the case
    # here is a process that has not
    spec = gym.registry.get("MiniGrid-Empty-5x5-v0")
    monkeypatch.delitem(gym.registry, "MiniGrid-Empty-5x5-v0", raising=False)
    with pytest.raises(ConfigError) as e:
        find_family("MiniGrid-Empty-5x5-v0")
    suggested = re.search(r"--env=(\S+) ", e.value.fix).group(1)
    assert suggested == "minigrid:MiniGrid-Empty-5x5-v0", e.value.fix
    if spec is not None:  # importing minigrid again registers nothing: it stays imported
        gym.registry["MiniGrid-Empty-5x5-v0"] = spec
    assert find_family(suggested) is not None  # the suggested name is one surge makes


def test_dmlab_is_refused_saying_why_it_is_not_available():
    with pytest.raises(ConfigError) as e:
        find_family("dmlab_30")
    message = str(e.value)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert "DMLab" in message and "not available" in message and "dmlab-gym" in message
    assert "3.13 and 3.14 only" in message and f"this Python is {version}" in message


def test_user_family_with_extra_params_and_overrides(tmp_path):
    from dataclasses import dataclass

    from surge.cfg.config import family_params, param

    @dataclass
    class CounterParams:
        counter_horizon: int = param(3, "Episode length of the counter env.")

    register_env_family(
        "counter_",
        lambda name, cfg, render_mode=None: _Counter(family_params(cfg, CounterParams).counter_horizon),
        extra_params=CounterParams,
        default_overrides={"use_rnn": False, "recurrence": 1, "with_vtrace": False},
    )
    cfg = parse_cfg(["--env=counter_a", "--counter_horizon=2", f"--train_dir={tmp_path}"])
    assert family_params(cfg, CounterParams).counter_horizon == 2 and cfg.use_rnn is False
    assert cfg.to_dict()["counter_horizon"] == 2  # cfg.json stays flat
    env = make_env(cfg)
    assert env.num_agents == 1
    obs, infos = env.reset(seed=0)
    assert len(obs) == 1 and isinstance(infos, list)
    env.step([0])
    obs, rew, term, trunc, infos = env.step([1])
    # auto-reset: the episode ended, the returned obs starts the next one, and its stats are reported
    assert term == [True] and obs[0][0] == 0.0
    assert infos[0]["episode"]["r"] == 2.0 and infos[0]["episode"]["l"] == 2


def test_a_missing_box2d_gets_one_fix(monkeypatch):
    import sys

    from surge.envs.registry import make_single_env
    from surge.errors import EnvError

    monkeypatch.setitem(sys.modules, "Box2D", None)  # `import Box2D` raises ImportError
    for name in [m for m in sys.modules if m.startswith("gymnasium.envs.box2d")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(EnvError) as e:
        make_single_env(find_family("LunarLander-v3"), "LunarLander-v3", None)
    msg = str(e.value)
    assert "LunarLander-v3" in msg and "Box2D" in msg
    # surge's extra, and not gymnasium's own (swig, then gymnasium[box2d]) beside it
    assert msg.count("Fix:") == 1 and 'pip install "surge-rl[box2d]"' in msg
    assert "swig" not in msg and "gymnasium[box2d]" not in msg


@pytest.mark.parametrize(
    "typo, suggestion, needs",
    [
        ("atari_breakot", "atari_breakout", "ale_py"),
        ("mujoco_halfcheeta", "mujoco_halfcheetah", None),
        ("doom_basik", "doom_basic", None),
    ],
)
def test_a_mistyped_family_env_is_refused_before_anything_is_written(
    tmp_path, capsys, typo, suggestion, needs
):
    import importlib.util

    from surge.cli import main as surge_main

    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed")
    train_dir = tmp_path / "train"
    code = surge_main(["train", f"--env={typo}", f"--train_dir={train_dir}", "--experiment=e"])
    err = capsys.readouterr().err
    assert code == 2 and "--env" in err and typo in err and f"did you mean {suggestion}" in err
    assert not train_dir.exists()  # no experiment folder, no log
