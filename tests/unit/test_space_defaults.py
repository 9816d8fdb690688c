"""Defaults chosen by an env's observation and action spaces (`surge.cfg.space_defaults`) for
plain gymnasium ids: the rule table, its precedence below YAML and flags, and resume.

Reference values are those of the peers the rules copy: CleanRL's ppo.py and SB3's rl-zoo for
classic control (MLP 64-64 tanh, Adam lr 3e-4, grad norm 0.5, entropy 0.01 for discrete actions)
and CleanRL's ppo_continuous_action.py / SB3's PPO for Box actions (state-independent log-std
starting at std 1, i.e. log_std_init=0, clip 0.2, 10 epochs, no entropy bonus)."""

import json
import sys
import types

import gymnasium as gym
import numpy as np
import pytest

from surge.app.notes import config_notes
from surge.app.resolve import parse_cfg
from surge.app.space_defaults import space_default_notes
from surge.cfg.config import Config, flag_value
from surge.cfg.space_defaults import as_overrides, space_defaults
from surge.envs.probe import probe_spaces
from surge.errors import EnvError

Box, Discrete, Dict = gym.spaces.Box, gym.spaces.Discrete, gym.spaces.Dict

#: CleanRL ppo.py (CartPole-v1) / SB3 rl-zoo classic control
CLASSIC = {
    "encoder_type": "mlp",
    "encoder_mlp_layers": [64, 64],
    "nonlinearity": "tanh",
    "use_rnn": False,
    "with_vtrace": False,
    "learning_rate": 3e-4,
    "max_grad_norm": 0.5,
    "normalize_input": True,
    "normalize_returns": True,
}
#: CleanRL ppo_continuous_action.py / SB3 PPO for Box actions
GAUSSIAN = {
    "adaptive_stddev": False,
    "initial_stddev": 1.0,
    "ppo_clip_ratio": 0.2,
    "ppo_epochs": 10,
    "exploration_loss_coeff": 0.0,
}


def _vector(n=4):
    return Box(-np.inf, np.inf, (n,), np.float32)


def test_vector_observations_and_discrete_actions_get_a_small_mlp_ppo():
    rules = as_overrides(space_defaults(_vector(4), Discrete(2)))
    assert {k: rules[k] for k in CLASSIC} == CLASSIC
    assert rules["exploration_loss_coeff"] == 0.01  # CleanRL ppo.py ent_coef
    assert rules["hidden_size"] < Config.hidden_size  # a small RNN core when one is asked for
    assert rules["reward_clip"] >= 100  # LunarLander's ±100 pass unclipped
    assert "adaptive_stddev" not in rules


def test_box_actions_get_the_gaussian_head_of_continuous_ppo():
    rules = as_overrides(space_defaults(_vector(3), Box(-2, 2, (1,), np.float32)))
    assert {k: rules[k] for k in CLASSIC} == CLASSIC
    assert {k: rules[k] for k in GAUSSIAN} == GAUSSIAN


def test_dicts_of_vectors_and_small_grids_count_as_vectors():
    assert (
        as_overrides(space_defaults(Dict({"a": _vector(2), "b": _vector(5)}), Discrete(3)))["encoder_type"]
        == "mlp"
    )
    assert as_overrides(space_defaults(Box(0, 1, (5, 5), np.float32), Discrete(3)))["encoder_type"] == "mlp"


@pytest.mark.parametrize(
    "obs",
    [
        Box(0, 255, (3, 84, 84), np.uint8),
        Dict({"image": Box(0, 255, (3, 64, 64), np.uint8), "vec": _vector(3)}),
    ],
)
def test_image_observations_keep_the_conv_defaults(obs):
    assert space_defaults(obs, Discrete(6)) == []


def test_with_an_rnn_the_bptt_chunk_is_the_rollout():
    assert as_overrides(space_defaults(_vector(), Discrete(2)))["recurrence"] == 1
    rnn = as_overrides(space_defaults(_vector(), Discrete(2), use_rnn=True, rollout=7))
    assert rnn["recurrence"] == 7 and rnn["batch_size"] % 7 == 0  # the learner takes whole chunks


def test_an_rnn_with_a_short_rollout_is_a_valid_config(tmp_path):
    cfg = parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--use_rnn=True", "--rollout=7"])
    assert (cfg.recurrence, cfg.batch_size % 7) == (7, 0)


def test_a_plain_gymnasium_id_gets_the_defaults_of_its_spaces(tmp_path):
    cfg = parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}"])
    assert {k: flag_value(cfg, k) for k in CLASSIC} == CLASSIC
    cfg = parse_cfg(["--env=Pendulum-v1", f"--train_dir={tmp_path}"])
    assert {k: flag_value(cfg, k) for k in GAUSSIAN} == GAUSSIAN
    assert cfg.encoder_mlp_layers == [64, 64]


def test_gymnasium_module_form_gets_them_too(tmp_path):
    cfg = parse_cfg(["--env=gymnasium.envs.classic_control:CartPole-v1", f"--train_dir={tmp_path}"])
    assert {k: flag_value(cfg, k) for k in CLASSIC} == CLASSIC


def test_families_keep_their_own_defaults(tmp_path):
    cfg = parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}"])
    assert (cfg.normalize_returns, cfg.reward_scale) == (False, 0.1)  # classic.VECTOR_OBS_DEFAULTS
    cfg = parse_cfg(["--env=memory_cue", f"--train_dir={tmp_path}"])
    assert (cfg.use_rnn, cfg.hidden_size, cfg.normalize_input) == (True, 32, False)


def test_yaml_and_flags_win_over_the_spaces(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 1e-3\nencoder_mlp_layers: [32]\nuse_rnn: true\n")
    cfg = parse_cfg(
        ["--env=CartPole-v1", f"--train_dir={tmp_path}", f"--cfg={path}", "--encoder_mlp_layers", "128"]
    )
    assert cfg.learning_rate == 1e-3 and cfg.encoder_mlp_layers == [128]
    assert cfg.use_rnn and cfg.recurrence == cfg.rollout  # an RNN asked for in YAML gets whole rollouts
    assert cfg.nonlinearity == "tanh"  # not given: still the spaces' default


def test_a_saved_config_wins_on_resume(tmp_path):
    saved = dict(Config(env="CartPole-v1").to_dict(), learning_rate=5e-5, encoder_mlp_layers=[256])
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "cfg.json").write_text(json.dumps(saved))
    cfg = parse_cfg(["--env=CartPole-v1", "--experiment=exp", f"--train_dir={tmp_path}"])
    assert cfg.learning_rate == 5e-5 and cfg.encoder_mlp_layers == [256]


def test_each_chosen_default_is_described_once_with_its_reason(tmp_path):
    cfg = parse_cfg(["--env=Pendulum-v1", f"--train_dir={tmp_path}", "--learning_rate=1e-3"])
    notes = space_default_notes(cfg)
    assert sum(n.startswith("--encoder_type=mlp ") for n in notes) == 1
    assert any(n.startswith("--adaptive_stddev=False ") and "Box actions" in n for n in notes)
    assert not any(n.startswith("--learning_rate") for n in notes)  # the flag chose it
    assert space_default_notes(parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}"])) == []


def test_a_missing_box2d_is_refused_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "Box2D", None)  # `import Box2D` raises ImportError
    for name in [m for m in sys.modules if m.startswith("gymnasium.envs.box2d")]:
        monkeypatch.delitem(sys.modules, name)
    probe_spaces.cache_clear()
    with pytest.raises(EnvError) as e:
        parse_cfg(["--env=LunarLander-v3", f"--train_dir={tmp_path}"])
    assert "LunarLander-v3" in str(e.value) and 'pip install "surge-rl[box2d]"' in str(e.value)
    probe_spaces.cache_clear()


def test_help_works_for_an_env_that_cannot_be_made(tmp_path, monkeypatch, capsys):
    module = types.ModuleType("surge_test_broken_env")
    monkeypatch.setitem(sys.modules, "surge_test_broken_env", module)

    def broken(**kwargs):
        raise ModuleNotFoundError("No module named 'Box2D'", name="Box2D")

    gym.register("SurgeBrokenEnv-v0", entry_point=broken)
    try:
        with pytest.raises(SystemExit):
            parse_cfg(["--env=SurgeBrokenEnv-v0", "--help"])
        assert "--learning_rate" in capsys.readouterr().out
        with pytest.raises(EnvError):
            parse_cfg(["--env=SurgeBrokenEnv-v0", f"--train_dir={tmp_path}"])
    finally:
        gym.registry.pop("SurgeBrokenEnv-v0")
        probe_spaces.cache_clear()


@pytest.mark.parametrize("env", ["CartPole-v1", "Pendulum-v1", "cartpole"])
def test_a2c_takes_the_chosen_defaults_it_can_use(tmp_path, env):
    """A2C takes one gradient step per batch: PPO's minibatch split chosen for small envs (and by
    the cartpole family) must not make `--algo=A2C` invalid, and parameters A2C ignores get no
    chosen default that the run would then report as idle."""
    cfg = parse_cfg([f"--env={env}", "--algo=A2C", f"--train_dir={tmp_path}"])
    assert (cfg.num_batches_per_iteration, cfg.learning_rate) == (1, 1e-3)  # A2C's own (rlpyt)
    assert config_notes(cfg) == []  # the family's or the spaces' values are not the user's
    if env != "cartpole":  # the family's overrides are not the spaces' choice
        assert cfg.ppo_epochs == Config.ppo_epochs
    cfg = parse_cfg([f"--env={env}", "--algo=A2C", "--ppo_epochs=7", f"--train_dir={tmp_path}"])
    assert config_notes(cfg) == ["--ppo_epochs has no effect with --algo=A2C (" + _a2c_description() + ")."]


def _a2c_description() -> str:
    from surge.learning.algorithm import get_algorithm

    return get_algorithm("A2C").description
