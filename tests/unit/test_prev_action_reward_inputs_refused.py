"""`--use_prev_action_reward`: the wrapper's spaces and values, what is refused (naming the flag
and the fix), and the ONNX file's extra inputs `prev_action` and `prev_reward`."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.cfg.config import Config
from surge.envs.prev_action_reward import PrevActionReward, wrap_prev_action_reward
from surge.errors import ConfigError
from surge.export.check import check_file
from surge.export.write import export_model
from surge.models.actor_critic import make_actor_critic

VEC = gym.spaces.Box(-3.0, 3.0, (5,), np.float32)


class _Spaces(gym.Env):
    """An env of the given spaces whose step pays 0.5 and never ends."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space):
        self.observation_space, self.action_space = obs_space, action_space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.5, False, False, {}


def test_discrete_actions_are_one_hot_and_a_reset_zeroes_both():
    env = PrevActionReward(_Spaces(VEC, gym.spaces.Discrete(3)))
    assert set(env.observation_space.spaces) == {"obs", "prev_action", "prev_reward"}
    obs, _ = env.reset(seed=0)
    assert obs["prev_action"].tolist() == [0, 0, 0] and obs["prev_reward"].tolist() == [0]
    obs, *_ = env.step(2)
    assert obs["prev_action"].tolist() == [0, 0, 1] and obs["prev_reward"].tolist() == [0.5]
    assert env.observation_space.contains(obs)
    obs, _ = env.reset()
    assert obs["prev_action"].tolist() == [0, 0, 0] and obs["prev_reward"].tolist() == [0]


def test_box_actions_are_the_vector_and_dict_observations_keep_their_entries():
    space = gym.spaces.Dict({"pos": VEC})
    env = PrevActionReward(_Spaces(space, gym.spaces.Box(-1.0, 1.0, (2,), np.float32)))
    env.reset(seed=0)
    obs, *_ = env.step(np.array([0.25, -0.5], np.float32))
    assert set(obs) == {"pos", "prev_action", "prev_reward"}
    assert obs["prev_action"].tolist() == [0.25, -0.5]


@pytest.mark.parametrize(
    ("obs_space", "action_space", "why"),
    [
        (VEC, gym.spaces.MultiDiscrete([2, 3]), "Discrete or Box action space"),
        (gym.spaces.Dict({"prev_reward": VEC}), gym.spaces.Discrete(2), "Box or Dict observation"),
        (gym.spaces.Tuple([VEC]), gym.spaces.Discrete(2), "Box or Dict observation"),
    ],
)
def test_spaces_it_cannot_extend_are_refused(obs_space, action_space, why):
    with pytest.raises(ConfigError, match=why) as e:
        PrevActionReward(_Spaces(obs_space, action_space))
    assert e.value.field == "use_prev_action_reward" and "Fix" in str(e.value)


def test_an_env_that_is_not_a_single_agent_gymnasium_env_is_refused():
    cfg = Config(env="two_players", use_prev_action_reward=True)
    with pytest.raises(ConfigError, match="single-agent gymnasium.Env") as e:
        wrap_prev_action_reward(object(), cfg)
    assert e.value.field == "use_prev_action_reward"


@pytest.mark.parametrize("algo", ["DQN", "SAC", "DUMMY_SAMPLER"])
def test_algorithms_whose_model_does_not_read_them_are_refused_naming_those_that_do(tmp_path, algo):
    env = "Pendulum-v1" if algo == "SAC" else "CartPole-v1"
    with pytest.raises(ConfigError) as e:
        parse_cfg(
            [f"--env={env}", f"--algo={algo}", f"--train_dir={tmp_path}", "--use_prev_action_reward=True"]
        )
    assert e.value.field == "use_prev_action_reward"
    assert "A2C, APPO, R2D2 do" in str(e.value) and "Fix" in str(e.value)


@pytest.mark.parametrize("use_rnn", [False, True])
def test_onnx_takes_prev_action_and_prev_reward_as_inputs(tmp_path, use_rnn):
    space = PrevActionReward(_Spaces(VEC, gym.spaces.Discrete(3))).observation_space
    cfg = Config(
        env="export_test",
        hidden_size=16,
        encoder_mlp_layers=[16],
        use_rnn=use_rnn,
        use_prev_action_reward=True,
        normalize_input=True,
    )
    torch.manual_seed(0)
    model = make_actor_critic(cfg, space, gym.spaces.Discrete(3)).eval()
    path = tmp_path / "policy.onnx"
    policy = export_model(model, space, "onnx", path)
    assert max(check_file(policy, path, "onnx").values()) <= 1e-5
    assert policy.input_names[:3] == ["obs", "prev_action", "prev_reward"]
    assert policy.input_names[3:] == (["rnn_states_in"] if use_rnn else [])
    # the file reads them: another previous reward gives other values
    session = ort.InferenceSession(str(path))
    feed = {name: x.numpy() for name, x in zip(policy.input_names, policy.example_inputs(4), strict=True)}
    values = session.run(["values"], feed)[0]
    feed["prev_reward"] = feed["prev_reward"] + 1.0
    assert not np.allclose(session.run(["values"], feed)[0], values)
