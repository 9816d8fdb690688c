"""Defaults chosen by the env's spaces for the replay algorithms (`Algorithm.space_defaults`,
`surge.learning.replay_space_defaults`) and the training budget (`surge.cfg.budget`), on plain
gymnasium ids (issue 55, items 8, 12, 13).

Reference values: rl-zoo3's CartPole-v1 DQN (lr 2.3e-3, batch 64, replay 100k, 128 gradient steps
per 256 env steps, exploration over 16% to 0.04, 256-256 network) with the three changes of
tests/learning/test_dqn.py, its sampled transitions per env step taken in half the updates; R2D2's small recipe of docs/algorithms.md; the Atari-sized defaults of
Stable-Baselines3's DQN (lr 1e-4, target update every 10k steps) and of R2D2 (Kapturowski et al.
2019: burn-in 40, sequences of 80, an LSTM) for images."""

import gymnasium as gym
import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.app.space_defaults import chosen_space_defaults, space_default_notes
from surge.cfg.budget import IMAGE_BUDGET, NO_BUDGET, VECTOR_BUDGET, no_end_note
from surge.cfg.config import flag_value
from surge.cfg.space_defaults import as_overrides

Box, Discrete = gym.spaces.Box, gym.spaces.Discrete
IMAGE = Box(0, 255, (84, 84, 4), np.uint8)
VECTOR = Box(-np.inf, np.inf, (4,), np.float32)

#: rl-zoo3's CartPole-v1 DQN and the learning test's changes (target 1000, double DQN, lr decay);
#: zoo's 0.5 x 64 sampled transitions per env step as 0.25 x 128
DQN_CORE = {
    "learning_rate": 2.3e-3,
    "batch_size": 128,
    "encoder_mlp_layers": [256, 256],
    "lr_schedule": "linear_decay",
    "train_for_env_steps": 100_000,
}
DQN_SECTION = {
    "replay_size": 100_000,
    "replay_ratio": 0.25,
    "target_update_interval": 1000,
    "double_dqn": True,
    "exploration_fraction": 0.16,
    "exploration_final_eps": 0.04,
}


def _parse(tmp_path, *args):
    return parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", *args])


def test_dqn_on_a_vector_env_gets_the_small_recipe(tmp_path):
    cfg = _parse(tmp_path, "--algo=DQN")
    assert {k: flag_value(cfg, k) for k in DQN_CORE} == DQN_CORE
    assert {k: getattr(cfg.algo_params, k) for k in DQN_SECTION} == DQN_SECTION


def test_dqn_flags_win_over_the_recipe(tmp_path):
    cfg = _parse(tmp_path, "--algo=DQN", "--learning_rate=1e-3", "--replay_ratio=0.5", "--double_dqn=False")
    assert (cfg.learning_rate, cfg.algo_params.replay_ratio, cfg.algo_params.double_dqn) == (
        1e-3,
        0.5,
        False,
    )
    assert cfg.batch_size == 128  # not given: still the recipe's


def test_images_keep_the_atari_sized_defaults():
    dqn = as_overrides(chosen_space_defaults("DQN", IMAGE, Discrete(4), {}))
    assert dqn == {"train_for_env_steps": IMAGE_BUDGET}  # the budget only: SB3's Atari DQN stays
    r2d2 = as_overrides(chosen_space_defaults("R2D2", IMAGE, Discrete(4), {}))
    assert r2d2 == {"train_for_env_steps": IMAGE_BUDGET}


def test_r2d2_on_a_vector_env_gets_the_small_recipe(tmp_path):
    cfg = _parse(tmp_path, "--algo=R2D2")
    p = cfg.algo_params
    # the paper's 64 x (40 + 80) LSTM steps per update ran at about 26 env frames/s on CartPole
    assert cfg.batch_size * (p.burn_in + p.sequence_length) <= 32 * 20
    assert (cfg.rnn_type, cfg.hidden_size, cfg.adam_eps) == ("gru", 32, 1e-8)
    assert p.replay_ratio <= 0.15 and cfg.train_for_env_steps == 100_000


@pytest.mark.parametrize(
    "args, algo",
    [(["--algo=DQN"], "DQN"), (["--algo=R2D2"], "R2D2"), (["--env=Pendulum-v1", "--algo=SAC"], "SAC")],
)
def test_each_algorithm_logs_its_own_reasons(tmp_path, args, algo):
    notes = space_default_notes(parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", *args]))
    assert notes
    assert not [n for n in notes if "PPO" in n], notes  # no policy-gradient reason for a replay algorithm
    if algo != "SAC":
        assert all(f"({algo} on a vector observation" in n or "1M env steps" in n for n in notes), notes


def test_a_value_given_is_not_reported_as_chosen(tmp_path):
    notes = space_default_notes(
        _parse(tmp_path, "--algo=DQN", "--train_for_env_steps=100000", "--batch_size=128")
    )
    assert not [n for n in notes if n.startswith(("--train_for_env_steps", "--batch_size"))]
    assert [n for n in notes if n.startswith("--replay_ratio=0.25 ")]  # in DQN's section


def test_a_plain_gymnasium_id_gets_a_budget_by_its_spaces(tmp_path):
    cfg = _parse(tmp_path)
    assert cfg.train_for_env_steps == VECTOR_BUDGET
    assert [n for n in space_default_notes(cfg) if n.startswith(f"--train_for_env_steps={VECTOR_BUDGET} ")]
    assert no_end_note(cfg) is None
    assert chosen_space_defaults("APPO", IMAGE, Discrete(4), {})[-1].value == IMAGE_BUDGET


def test_a_given_budget_wins(tmp_path):
    assert _parse(tmp_path, "--train_for_env_steps=5000").train_for_env_steps == 5000
    assert _parse(tmp_path, "--algo=DQN", "--train_for_env_steps=5000").train_for_env_steps == 5000
    # a time budget given: no step budget is chosen, the run stops by the clock
    cfg = _parse(tmp_path, "--train_for_seconds=60")
    assert (cfg.train_for_env_steps, no_end_note(cfg)) == (NO_BUDGET, None)
    path = tmp_path / "b.yaml"
    path.write_text("train_for_env_steps: 7000\n")
    assert _parse(tmp_path, f"--cfg={path}").train_for_env_steps == 7000


def test_a_family_keeps_sample_factorys_budget_and_says_it_has_no_end(tmp_path):
    cfg = parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}"])
    assert cfg.train_for_env_steps == NO_BUDGET
    note = no_end_note(cfg)
    assert note is not None and "no end" in note and "--train_for_env_steps" in note


def test_sac_logs_no_encoder_it_does_not_use():
    """SAC's networks flatten a plain vector (their own --net_arch follows), so no encoder default
    is chosen or logged for it; a Dict's vectors go through the MLP encoder, which keeps its size."""
    action = Box(-1, 1, (2,), np.float32)
    plain = as_overrides(chosen_space_defaults("SAC", VECTOR, action, {}))
    assert "encoder_type" not in plain and plain["reward_clip"] >= 16  # Pendulum's -16 unclipped
    obs = gym.spaces.Dict({"a": VECTOR, "b": Box(-1, 1, (3,), np.float32)})
    rules = as_overrides(chosen_space_defaults("SAC", obs, action, {}))
    assert (rules["encoder_type"], rules["encoder_mlp_layers"]) == ("mlp", [64, 64])
