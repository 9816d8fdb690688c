"""Config CLI: Sample Factory spelling, defaults, YAML, family overrides, validation, round trip."""

import json

import pytest

from surge.cfg.cli import parse_cfg, save_cfg
from surge.cfg.config import Config, minibatches_to_accumulate
from surge.errors import ConfigError
from surge.runtime.components import blocks_per_split


def test_sample_factory_flags_parse_with_their_spelling(tmp_path):
    cfg = parse_cfg(
        [
            "--env=atari_breakout",
            "--algo=APPO",
            "--use_rnn=True",
            "--experiment=x",
            f"--train_dir={tmp_path}",
            "--rollout=32",
            "--recurrence=32",
            "--with_vtrace=True",
            "--train_for_env_steps=4e6",
            "--gamma=0.995",
            "--num_envs_per_worker=4",
        ]
    )
    assert cfg.use_rnn is True and cfg.train_for_env_steps == 4_000_000 and cfg.gamma == 0.995
    assert cfg.env_frameskip == 4  # added by the Atari family
    assert cfg.encoder_subtype == "convnet_deepmind"  # family default override


def test_seed_004_defaults_are_kept():
    cfg = Config()
    assert (cfg.rollout, cfg.recurrence, cfg.batch_size, cfg.ppo_clip_ratio, cfg.ppo_clip_value) == (
        32,
        32,
        1024,
        0.1,
        1.0,
    )
    assert (cfg.exploration_loss_coeff, cfg.max_grad_norm, cfg.adam_eps, cfg.max_policy_lag) == (
        0.003,
        4.0,
        1e-6,
        100,
    )
    assert cfg.num_minibatches_to_accumulate == -1 and cfg.with_vtrace is True and cfg.vtrace_rho == 1.0


@pytest.mark.parametrize(
    "argv,field",
    [
        (["--env=cartpole", "--num_envs_per_worker=3", "--worker_num_splits=2"], "num_envs_per_worker"),
        (["--env=cartpole", "--rollout=30", "--recurrence=8"], "rollout"),
        (["--env=cartpole", "--rollout=abc"], "rollout"),
        (["--env=cartpole", "--use_rnn=maybe"], "use_rnn"),
        (["--env=cartpole", "--not_a_flag=1"], "not_a_flag"),
        (["--env=no_such_env_xyz"], "env"),
        (["--env=cartpole", "--with_vtrace=True", "--rollout=32", "--recurrence=8"], "recurrence"),
        (["--env=cartpole", "--batch_size=0"], "batch_size"),
        (["--env=cartpole", "--rnn_type=transformer"], "rnn_type"),
        (["--env=cartpole", "--num_minibatches_to_accumulate=-2"], "num_minibatches_to_accumulate"),
        (["--env=cartpole", "--num_batches_to_accumulate=-1"], "num_batches_to_accumulate"),
        (
            ["--env=cartpole", "--num_batches_to_accumulate=1", "--num_minibatches_to_accumulate=3"],
            "num_batches_to_accumulate",
        ),
    ],
)
def test_invalid_values_are_refused_naming_the_field(argv, field, tmp_path):
    with pytest.raises(ConfigError) as e:
        parse_cfg(argv + [f"--train_dir={tmp_path}"])
    assert f"--{field}" in str(e.value)


def test_sample_factory_2_accumulation_flag_counts_training_iterations(tmp_path):
    base = [
        "--env=cartpole",
        "--num_workers=2",
        "--num_envs_per_worker=4",
        "--worker_num_splits=2",
        "--rollout=32",
        "--recurrence=32",
        "--batch_size=256",
        "--num_batches_per_iteration=2",
        f"--train_dir={tmp_path}",
    ]
    sf2 = parse_cfg(base + ["--num_batches_to_accumulate=3"])
    seed = parse_cfg(base + ["--num_minibatches_to_accumulate=6"])
    default = parse_cfg(base)
    sync = parse_cfg(base + ["--num_batches_to_accumulate=0"])
    assert minibatches_to_accumulate(sf2) == 6 and minibatches_to_accumulate(sync) == 0
    # 16 trajectories per iteration in blocks of 2 agents over 4 (worker, split) owners: 2 blocks
    # each per iteration held, plus one in progress
    assert blocks_per_split(sf2, 1) == blocks_per_split(seed, 1) == 3 * 2 + 1
    assert blocks_per_split(default, 1) == 2 * 2 + 1
    assert blocks_per_split(sync, 1) == 2


def test_misspelled_flag_suggests_the_right_one(tmp_path):
    with pytest.raises(ConfigError, match="did you mean --num_workers"):
        parse_cfg(["--env=cartpole", "--num_worker=2", f"--train_dir={tmp_path}"])


def test_yaml_file_is_read_and_command_line_wins(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("env: cartpole\nlearning_rate: 0.01\ngamma: 0.9\n")
    cfg = parse_cfg([f"--cfg={y}", "--gamma=0.95", f"--train_dir={tmp_path}"])
    assert cfg.env == "cartpole" and cfg.learning_rate == 0.01 and cfg.gamma == 0.95


def test_yaml_scalars_get_the_fields_types(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text(
        "env: cartpole\nlearning_rate: 3e-4\ntrain_for_env_steps: 1e6\nuse_rnn: 'False'\nencoder_mlp_layers: [32, 32]\n"
    )
    cfg = parse_cfg([f"--cfg={y}", f"--train_dir={tmp_path}"])
    assert cfg.learning_rate == 3e-4 and cfg.train_for_env_steps == 1_000_000 and cfg.use_rnn is False
    assert cfg.encoder_mlp_layers == [32, 32]
    y.write_text("env: cartpole\nrollout: many\n")
    with pytest.raises(ConfigError, match="--rollout"):
        parse_cfg([f"--cfg={y}", f"--train_dir={tmp_path}"])


def test_yaml_unknown_key_is_refused(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("env: cartpole\nlearnin_rate: 0.01\n")
    with pytest.raises(ConfigError, match="learnin_rate"):
        parse_cfg([f"--cfg={y}", f"--train_dir={tmp_path}"])


def test_round_trip_through_saved_cfg_and_resume_warns_on_changes(tmp_path, caplog):
    cfg = parse_cfg(["--env=cartpole", "--experiment=e", f"--train_dir={tmp_path}", "--gamma=0.97"])
    save_cfg(cfg, tmp_path / "e" / "cfg.json")
    saved = json.loads((tmp_path / "e" / "cfg.json").read_text())
    assert saved["gamma"] == 0.97 and saved["env"] == "cartpole"
    with caplog.at_level("WARNING", logger="surge"):
        again = parse_cfg(
            ["--env=cartpole", "--experiment=e", f"--train_dir={tmp_path}", "--learning_rate=0.002"]
        )
    assert again.gamma == 0.97  # from the saved config
    assert again.learning_rate == 0.002
    assert any("learning_rate" in r.message for r in caplog.records)
    assert again.to_dict() == {**saved, "learning_rate": 0.002, "restart_behavior": "resume"}


def test_help_lists_family_parameters(capsys):
    with pytest.raises(SystemExit) as e:
        parse_cfg(["--env=atari_pong", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--env_frameskip" in out and "--rollout" in out and "--atari_episodic_life" in out
