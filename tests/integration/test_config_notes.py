"""Accepted flags without effect are reported once, with the reason, in the run's surge_log.txt."""

from surge.app.resolve import parse_cfg
from surge.app.training_run import train


def test_flags_without_effect_are_reported_once_in_the_log_file(tmp_path):
    cfg = parse_cfg(
        [
            "--env=cartpole",
            "--experiment=exp",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--train_for_env_steps=200",
            "--hidden_size=16",
            "--encoder_mlp_layers=16",
            "--learner_main_loop_num_cores=4",
            "--default_niceness=5",
            "--policy_workers_per_policy=2",
            "--pbt_mutation_rate=0.5",
            "--actor_worker_gpus",
            "0",
        ]
    )
    assert train(cfg) == "done"
    log = (tmp_path / "exp" / "surge_log.txt").read_text()
    for flag, why in [
        ("--actor_worker_gpus", "has no effect in surge (rollout workers do not render"),
        ("--learner_main_loop_num_cores", "has no effect in surge (the learner uses"),
        ("--default_niceness", "has no effect with --serial_mode=True (there are no child processes"),
        ("--policy_workers_per_policy", "has no effect with --serial_mode=True (inference runs"),
        ("--pbt_mutation_rate", "has no effect without --with_pbt=True"),
    ]:
        assert log.count(f"{flag} {why}") == 1, flag
    assert "--num_workers has no effect" not in log  # serial mode runs num_workers workers too


def test_defaults_chosen_by_the_spaces_are_reported_once_in_the_log_file(tmp_path):
    cfg = parse_cfg(
        [
            "--env=Pendulum-v1",
            "--experiment=exp",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--train_for_env_steps=200",
            "--learning_rate=1e-3",
        ]
    )
    assert train(cfg) == "done"
    log = (tmp_path / "exp" / "surge_log.txt").read_text()
    assert log.count("--encoder_type=mlp chosen by the env's spaces (vector observation") == 1
    assert log.count("--adaptive_stddev=False chosen by the env's spaces (Box actions") == 1
    assert "--learning_rate=" not in log  # given on the command line, not chosen
    assert "--num_envs_per_worker=8" not in log
