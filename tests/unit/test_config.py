"""Config CLI: Sample Factory spelling, defaults, YAML, family overrides, validation, round trip."""

import json
import os

import pytest

from surge.algorithms.appo.config import APPOParams
from surge.app.resolve import parse_cfg
from surge.cfg.cli import save_cfg
from surge.cfg.config import Config, algo_params, minibatches_to_accumulate
from surge.envs.atari import AtariParams
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
    assert isinstance(cfg.env_params, AtariParams) and cfg.env_params.env_frameskip == 4  # the Atari section
    assert cfg.encoder_subtype == "convnet_deepmind"  # family default override


def test_seed_004_defaults_are_kept():
    cfg = Config()
    assert (
        cfg.rollout,
        cfg.recurrence,
        cfg.batch_size,
        algo_params(cfg, APPOParams).ppo_clip_ratio,
        algo_params(cfg, APPOParams).ppo_clip_value,
    ) == (
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
    assert (
        cfg.num_minibatches_to_accumulate == -1
        and algo_params(cfg, APPOParams).with_vtrace is True
        and algo_params(cfg, APPOParams).vtrace_rho == 1.0
    )


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
        (["--env=cartpole", "--num_torch_threads=2147483648"], "num_torch_threads"),
        (["--env=cartpole", "--num_torch_threads=-1"], "num_torch_threads"),
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


def test_round_trip_through_saved_cfg_and_resume_warns_on_changes(tmp_path):
    from surge.cfg.cli import resume_notes

    cfg = parse_cfg(["--env=cartpole", "--experiment=e", f"--train_dir={tmp_path}", "--gamma=0.97"])
    assert resume_notes(cfg) == []
    save_cfg(cfg, tmp_path / "e" / "cfg.json")
    saved = json.loads((tmp_path / "e" / "cfg.json").read_text())
    assert saved["gamma"] == 0.97 and saved["env"] == "cartpole"
    again = parse_cfg(
        ["--env=cartpole", "--experiment=e", f"--train_dir={tmp_path}", "--learning_rate=0.002"]
    )
    assert again.gamma == 0.97  # from the saved config
    assert again.learning_rate == 0.002
    # the run logs them once its log file is open (TrainingRun; test_serial_training reads the log)
    assert resume_notes(again) == [
        f"Parameter learning_rate changed on resume: {saved['learning_rate']!r} (saved) -> 0.002 (command line)"
    ]
    assert again.to_dict() == {**saved, "learning_rate": 0.002, "restart_behavior": "resume"}


def test_help_lists_family_parameters(capsys):
    with pytest.raises(SystemExit) as e:
        parse_cfg(["--env=atari_pong", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--env_frameskip" in out and "--rollout" in out and "--atari_episodic_life" in out


@pytest.mark.parametrize(
    "argv,field,fix",
    [
        (["--reward_scale=nan"], "reward_scale", "finite"),
        (["--policy_init_gain=-inf"], "policy_init_gain", "finite"),
        (["--value_loss_coeff=1e400"], "value_loss_coeff", "finite"),
        (["--max_grad_norm=-1"], "max_grad_norm", ">= 0"),
        (["--value_loss_coeff=-0.5"], "value_loss_coeff", ">= 0"),
        (["--kl_loss_coeff=-0.1"], "kl_loss_coeff", ">= 0"),
        (["--exploration_loss_coeff=-0.01"], "exploration_loss_coeff", ">= 0"),
        (["--obs_scale=-255"], "obs_scale", "> 0"),
        (["--obs_scale=0"], "obs_scale", "> 0"),
        (["--max_policy_lag=-1"], "max_policy_lag", ">= 0"),
        (["--report_interval_sec=inf"], "report_interval_sec", "finite"),
        (["--report_interval_sec=0"], "report_interval_sec", "> 0"),
        (["--adam_beta1=1.0"], "adam_beta1", "[0, 1)"),
        (["--adam_beta2=-0.5"], "adam_beta2", "[0, 1)"),
        (["--adam_beta2=nan"], "adam_beta2", "finite"),
        (["--stats_avg=-7"], "stats_avg", ">= 1"),
        (["--stats_avg=0"], "stats_avg", ">= 1"),
        (["--seed=99999999999999999999"], "seed", "2**32"),
        (["--seed=-1"], "seed", "2**32"),
        (["--encoder_mlp_layers", "64", "0"], "encoder_mlp_layers", ">= 1"),
        # issue 24: values that make a run meaningless, or crash it with a torch error
        (["--vtrace_rho=-1"], "vtrace_rho", "> 0"),
        (["--vtrace_rho=0"], "vtrace_rho", "> 0"),
        (["--vtrace_c=-0.5"], "vtrace_c", ">= 0"),
        (["--reward_scale=-1"], "reward_scale", "> 0"),
        (["--reward_scale=0"], "reward_scale", "> 0"),
        (["--initial_stddev=0"], "initial_stddev", "> 0"),
        (["--initial_stddev=-1"], "initial_stddev", "> 0"),
        (["--policy_workers_per_policy=-1"], "policy_workers_per_policy", "N >= 1"),
        (["--policy_workers_per_policy=0", "--device=gpu"], "policy_workers_per_policy", "--device=cpu"),
    ],
)
def test_harmful_values_are_refused_naming_the_field_and_the_fix(argv, field, fix, tmp_path):
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", *argv])
    assert e.value.field == field and fix in e.value.fix, str(e.value)


def test_no_inference_workers_is_accepted_on_the_cpu_and_in_the_serial_placement(tmp_path):
    """0 acts in the rollout workers (CPU); the serial placement has no inference processes at all."""
    base = ["--env=cartpole", f"--train_dir={tmp_path}", "--policy_workers_per_policy=0"]
    assert parse_cfg(base).policy_workers_per_policy == 0
    assert parse_cfg([*base, "--serial_mode=True"]).policy_workers_per_policy == 0


def test_acting_in_workers_defaults_to_one_split_unless_splits_are_given_or_saved(tmp_path):
    """A worker that acts itself has no inference process to overlap a second split with: without
    --worker_num_splits it gets 1 (logged); given, saved by the run it resumes, with inference
    workers or in the serial placement, the value stays."""
    from surge.cfg.cli import default_notes

    base = ["--env=cartpole", f"--train_dir={tmp_path}", "--experiment=e"]
    assert parse_cfg(base).worker_num_splits == 2  # Sample Factory's default
    cfg = parse_cfg([*base, "--policy_workers_per_policy=0"])
    assert cfg.worker_num_splits == 1
    assert any(
        "--worker_num_splits=1 chosen by --policy_workers_per_policy=0" in n for n in default_notes(cfg)
    )
    given = parse_cfg([*base, "--policy_workers_per_policy=0", "--worker_num_splits=2"])
    assert given.worker_num_splits == 2 and default_notes(given) == []
    assert parse_cfg([*base, "--policy_workers_per_policy=0", "--serial_mode=True"]).worker_num_splits == 2
    assert default_notes(parse_cfg(base)) == []
    # a run saved with 2 splits resumes with 2, though the resume command does not repeat the flag
    save_cfg(given, tmp_path / "e" / "cfg.json")
    resumed = parse_cfg([*base, "--policy_workers_per_policy=0"])
    assert resumed.worker_num_splits == 2 and default_notes(resumed) == []


def test_largest_valid_seed_is_accepted(tmp_path):
    assert parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", f"--seed={2**32 - 1}"]).seed == 2**32 - 1


@pytest.mark.parametrize(
    "etype,subtype,ok",
    [
        ("conv", "convnet_simple", True),
        ("conv", "convnet_deepmind", True),
        ("conv", "convnet_impala", True),
        ("conv", "resnet_impala", False),
        ("conv", "mlp_mujoco", False),
        ("conv", "mlp", False),
        ("resnet", "resnet_impala", True),
        ("resnet", "convnet_simple", True),  # the default subtype: --encoder_type=resnet alone
        ("resnet", "convnet_deepmind", False),
        ("resnet", "mlp", False),
        ("mlp", "mlp", True),
        ("mlp", "mlp_mujoco", True),
        ("mlp", "convnet_simple", True),  # the default subtype: --encoder_type=mlp alone
        ("mlp", "convnet_impala", False),
        ("mlp", "resnet_impala", False),
    ],
)
def test_encoder_type_and_subtype_must_go_together(etype, subtype, ok, tmp_path):
    argv = [
        "--env=atari_pong",
        f"--train_dir={tmp_path}",
        f"--encoder_type={etype}",
        f"--encoder_subtype={subtype}",
    ]
    if ok:
        parse_cfg(argv)
        return
    with pytest.raises(ConfigError) as e:
        parse_cfg(argv)
    assert e.value.field == "encoder_subtype" and "--encoder_type=" in e.value.fix


@pytest.mark.parametrize(
    "argv,field",
    [
        (["--rollout=1e9", "--recurrence=1e9", "--batch_size=1e9"], "rollout"),
        (["--encoder_mlp_layers", "1e9"], "encoder_mlp_layers"),
        (["--hidden_size=1e6", "--use_rnn=True"], "hidden_size"),
    ],
)
def test_sizes_that_cannot_fit_in_memory_are_refused(argv, field, tmp_path, monkeypatch):
    import surge.runtime.memory_estimate

    monkeypatch.setattr(surge.runtime.memory_estimate, "physical_memory_bytes", lambda: 64 * 10**9)
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", *argv])
    assert e.value.field == field and "GB" in e.value.problem and "memory" in e.value.problem


def test_physical_memory_is_read_and_sizes_that_fit_are_accepted(tmp_path):
    from surge.runtime.memory_estimate import physical_memory_bytes

    with open("/proc/meminfo") as f:
        total_kb = int(next(line for line in f if line.startswith("MemTotal:")).split()[1])
    assert abs(physical_memory_bytes() - total_kb * 1024) < 0.05 * total_kb * 1024
    parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", "--rollout=4096", "--recurrence=1"])


def _no_wandb_login(monkeypatch, tmp_path):
    for var in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_DISABLED", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NETRC", str(tmp_path / "home" / ".netrc"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "home" / "wandb_config"))
    monkeypatch.chdir(tmp_path)


def test_with_wandb_without_a_login_is_refused_and_offline_mode_is_allowed(monkeypatch, tmp_path):
    pytest.importorskip("wandb")
    _no_wandb_login(monkeypatch, tmp_path)
    argv = ["--env=cartpole", f"--train_dir={tmp_path}", "--with_wandb=True"]
    with pytest.raises(ConfigError) as e:
        parse_cfg(argv)
    assert (
        e.value.field == "with_wandb" and "wandb login" in e.value.fix and "WANDB_MODE=offline" in e.value.fix
    )
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert parse_cfg(argv).with_wandb is True
    monkeypatch.delenv("WANDB_MODE")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert parse_cfg(argv).with_wandb is True


# ------------------------------------------------------------------ issue 24: experiment folder


@pytest.mark.parametrize(
    "experiment,where",
    [
        ("../../etc", "etc"),  # two levels above --train_dir
        ("..", ""),
        ("a/../..", ""),
        ("/tmp/elsewhere", "/tmp/elsewhere"),
    ],
)
def test_an_experiment_name_outside_the_train_dir_is_refused(experiment, where, tmp_path):
    train_dir = tmp_path / "a" / "b"
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={train_dir}", f"--experiment={experiment}"])
    assert e.value.field == "experiment" and "--experiment=" in e.value.fix, str(e.value)
    assert "not a folder inside --train_dir" in e.value.problem and where in e.value.problem
    assert not any(tmp_path.rglob("*")), "nothing is written"


@pytest.mark.parametrize("experiment", ["", "  "])
def test_an_empty_experiment_name_is_refused(experiment, tmp_path):
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", f"--experiment={experiment}"])
    assert e.value.field == "experiment" and "empty" in e.value.problem, str(e.value)


def test_experiment_names_inside_the_train_dir_are_accepted(tmp_path):
    for name in ("run", "group/run", "./run", "a/../run"):
        cfg = parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", f"--experiment={name}"])
        from surge.runtime.experiment_folder import ExperimentFolder

        root = ExperimentFolder(cfg).root.resolve()
        assert tmp_path.resolve() in root.parents, name


def test_experiment_folder_refuses_a_name_outside_the_train_dir_of_a_hand_built_config(tmp_path):
    from surge.runtime.experiment_folder import ExperimentFolder

    cfg = parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}"])
    cfg.experiment = "../outside"
    with pytest.raises(ConfigError, match="--experiment"):
        ExperimentFolder(cfg)


def test_enjoy_refuses_an_experiment_name_outside_the_train_dir(tmp_path, capsys):
    from surge.cli import main

    assert main(["enjoy", "--env=cartpole", f"--train_dir={tmp_path}", "--experiment=../x"]) == 2
    err = capsys.readouterr().err
    assert "--experiment" in err and "not a folder inside --train_dir" in err, err


# ------------------------------------------------------------------ issue 24: train dir


def _unwritable_train_dirs(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    dirs = [(str(a_file / "x"), "train_dir"), (str(a_file), "train_dir")]
    if os.path.isdir("/proc/self"):  # procfs refuses new folders, even to root
        dirs.append(("/proc/x", "train_dir"))
    return dirs


def test_a_train_dir_that_cannot_be_created_is_refused_with_one_line(tmp_path, capsys):
    from surge.cli import main

    for train_dir, field in _unwritable_train_dirs(tmp_path):
        code = main(["train", "--env=cartpole", f"--train_dir={train_dir}", "--serial_mode=True"])
        err = capsys.readouterr().err
        assert code == 2, (train_dir, err)
        assert err.startswith(f"surge train: error: --{field}: ") and "Fix: pass a --train_dir" in err, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert [p.name for p in tmp_path.iterdir()] == ["a_file"]


def test_an_experiment_name_taken_by_a_file_is_refused(tmp_path):
    (tmp_path / "exp").write_text("")
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", "--experiment=exp"])
    assert e.value.field == "experiment" and "not a folder" in e.value.problem


def test_the_train_dir_check_leaves_nothing_behind(tmp_path):
    parse_cfg(["--env=cartpole", f"--train_dir={tmp_path / 'new' / 'dir'}"])
    assert not any(tmp_path.iterdir())


# ------------------------------------------------------------------ issue 24: idle policies


@pytest.mark.parametrize(
    "argv,idle",
    [
        (["--num_policies=3", "--policy_mapping=agent_index"], "policies 1 and 2"),
        (["--num_policies=2", "--policy_mapping=agent_index"], "policy 1"),
        (
            ["--num_policies=3", "--policy_mapping=env_index", "--num_workers=1", "--num_envs_per_worker=2"],
            "policy 2",
        ),
    ],
)
def test_policies_the_mapping_can_never_pick_are_refused(argv, idle, tmp_path):
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", *argv])  # one agent per env
    assert e.value.field == "num_policies" and e.value.problem.startswith(f"{idle} would never act"), str(
        e.value
    )
    assert "--num_policies=" in e.value.fix and "--policy_mapping=random" in e.value.fix


def test_policies_every_agent_or_env_can_pick_are_accepted(tmp_path):
    from surge.sampling.checks import check_policy_mapping

    base = ["--env=cartpole", f"--train_dir={tmp_path}", "--num_policies=2"]
    cfg = parse_cfg([*base, "--policy_mapping=env_index", "--num_workers=1", "--num_envs_per_worker=2"])
    assert cfg.num_policies == 2
    assert parse_cfg([*base, "--policy_mapping=random"]).num_policies == 2
    cfg.policy_mapping = "agent_index"
    check_policy_mapping(cfg, num_agents=2)  # a two-player env: one policy per player
    with pytest.raises(ConfigError):
        check_policy_mapping(cfg, num_agents=1)


def test_the_run_start_refuses_idle_policies_of_a_config_validation_did_not_see(tmp_path):
    """A hand-built config, or one whose env could not be made during validation: env_info, which
    counts the agents anyway, refuses before anything is allocated."""
    from surge.runtime.components import env_info

    cfg = parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}"])
    cfg.num_policies, cfg.policy_mapping = 2, "agent_index"
    with pytest.raises(ConfigError, match="--num_policies: policy 1 would never act"):
        env_info(cfg)
