"""The "write your own algorithm" guide of docs/algorithms.md, kept true (issue 20, the seams): a
user's algorithm module (`tests/user_algo_example.py`) with its own config section, learner-only
modules (a critic and its target) and two optimizers is named on the command line as
`--algo=tests.user_algo_example:USER_AC`, trains on CartPole in the serial and the async placement,
resumes from its checkpoint with its learner modules and both optimizers restored, and is played
by `surge enjoy` through its `eval_act`."""

import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `tests.user_algo_example` as the command line names it
    sys.path.insert(0, str(ROOT))

import surge.enjoy  # noqa: E402
from surge.app.resolve import parse_cfg  # noqa: E402
from surge.app.training_run import train  # noqa: E402
from surge.cfg.cli import save_cfg  # noqa: E402
from surge.errors import ConfigError  # noqa: E402
from surge.runtime.checkpoint import CheckpointManager  # noqa: E402
from surge.runtime.serial import SerialPlacement  # noqa: E402

ALGO = "--algo=tests.user_algo_example:USER_AC"
ARGS = [
    "--env=CartPole-v1",
    ALGO,
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--rollout=16",
    "--recurrence=16",
    "--batch_size=128",
    "--use_rnn=False",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
    "--num_torch_threads=1",
    "--user_tau=0.1",
    "--seed=3",
]


def _cfg(tmp_path, *extra):
    return parse_cfg([*ARGS, f"--train_dir={tmp_path}", *extra])


def _train(cfg):
    threads = torch.get_num_threads()
    try:
        return train(cfg)
    finally:
        torch.set_num_threads(threads)


def _assert_same(a, b):
    """Two nested state dicts hold equal tensors and values."""
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same(x, y)
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b)
    else:
        assert a == b


def test_the_section_is_parsed_shown_in_help_and_checked(tmp_path, capsys):
    from tests.user_algo_example import UserACParams

    cfg = _cfg(tmp_path, "--user_critic_lr=0.002")
    assert isinstance(cfg.algo_params, UserACParams)
    assert cfg.algo_params.user_critic_lr == 0.002 and cfg.algo_params.user_tau == 0.1
    assert cfg.algo_params.user_hidden == 32  # the section's default
    assert cfg.to_dict()["user_tau"] == 0.1  # what cfg.json holds
    with pytest.raises(ConfigError) as e:  # the section's own validation
        _cfg(tmp_path, "--user_tau=2")
    assert e.value.field == "user_tau"
    with pytest.raises(ConfigError) as e:  # another algorithm's flag, named with its owner
        parse_cfg(["--env=CartPole-v1", "--algo=APPO", "--user_tau=0.1", f"--train_dir={tmp_path}"])
    assert e.value.field == "user_tau" and "USER_AC" in str(e.value)
    with pytest.raises(ConfigError) as e:  # PPO's flags (and their range checks) are APPO's section
        parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--ppo_clip_ratio=-1", ALGO])
    assert e.value.field == "ppo_clip_ratio" and "--algo=APPO" in str(e.value)
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--ppo_clip_ratio=-1"])
    assert e.value.field == "ppo_clip_ratio"  # still refused for APPO
    with pytest.raises(SystemExit):
        parse_cfg(["--env=CartPole-v1", ALGO, "--help"])
    out = capsys.readouterr().out
    assert "algorithm tests.user_algo_example:USER_AC:" in out and "--user_tau" in out


def test_a_wrong_module_or_name_is_refused_at_parse_time(tmp_path):
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=CartPole-v1", "--algo=tests.no_such_module:USER_AC", f"--train_dir={tmp_path}"])
    assert e.value.field == "algo" and "cannot import" in str(e.value)
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=CartPole-v1", "--algo=tests.user_algo_example:NOPE", f"--train_dir={tmp_path}"])
    assert e.value.field == "algo" and "registers no algorithm 'NOPE'" in str(e.value)


def test_a_resume_or_enjoy_without_algo_takes_the_saved_runs_section_flags(tmp_path):
    """The review of the seams: a resumed USER_AC run given `--user_tau` without `--algo` was
    refused ("a flag of --algo=USER_AC's section, not of --algo=APPO's"): the saved algorithm was
    read only after the flags were checked against APPO's."""
    cfg = _cfg(tmp_path)
    folder = tmp_path / "user"
    folder.mkdir()
    save_cfg(cfg, folder / "cfg.json")
    argv = ["--env=CartPole-v1", "--experiment=user", f"--train_dir={tmp_path}", "--user_tau=0.2"]
    resumed = parse_cfg(argv)
    assert resumed.algo == "tests.user_algo_example:USER_AC" and resumed.algo_params.user_tau == 0.2
    assert parse_cfg(argv, evaluation=True).algo_params.user_tau == 0.2
    with pytest.raises(ConfigError) as e:  # restarting from scratch is a new APPO run: not its flag
        parse_cfg([*argv, "--restart_behavior=overwrite"])
    assert e.value.field == "user_tau"
    assert "pass --algo=tests.user_algo_example:USER_AC" in str(e.value)  # what works in a fresh process


def _check_checkpoint(state):
    assert set(state["learner_modules"]) == {"critic", "target"}
    assert set(state["learner"]["optimizers"]) == {"model", "critic"}
    assert state["learner"]["optimizers"]["critic"]["state"]  # the critic's Adam has stepped
    assert state["learner"]["policy_version"] > 0
    assert state["learner"]["schedulers"]["critic"]["last_epoch"] == state["learner"]["policy_version"]


@pytest.mark.slow
def test_serial_trains_resumes_with_modules_and_optimizers_and_enjoy_uses_eval_act(tmp_path, capsys):
    cfg = _cfg(tmp_path, "--serial_mode=True", "--experiment=user_serial", "--train_for_env_steps=3000")
    assert _train(cfg) == "done"
    ckpts = CheckpointManager(tmp_path / "user_serial" / "checkpoint_p0")
    saved = ckpts.load("latest")
    assert saved is not None
    _check_checkpoint(saved)
    saved_cfg = json.loads((tmp_path / "user_serial" / "cfg.json").read_text())
    assert saved_cfg["algo"] == "tests.user_algo_example:USER_AC" and saved_cfg["user_tau"] == 0.1

    # resumed: the command line names neither the algorithm nor its flags; cfg.json brings both
    resumed = parse_cfg(
        [
            "--env=CartPole-v1",
            f"--train_dir={tmp_path}",
            "--experiment=user_serial",
            "--train_for_env_steps=5000",
        ]
    )
    assert resumed.algo == cfg.algo and resumed.algo_params == cfg.algo_params
    placement = SerialPlacement(resumed, [ckpts], [saved])
    placement.start()
    learner = placement.c.learners[0]
    for name, module in learner.learner_modules.items():
        _assert_same(module.state_dict(), saved["learner_modules"][name])
    for name, opt in learner.optimizers.items():
        _assert_same(opt.state_dict(), saved["learner"]["optimizers"][name])
    _assert_same(learner.schedulers["critic"].state_dict(), saved["learner"]["schedulers"]["critic"])
    _assert_same(placement.c.models[0].state_dict(), saved["model"])
    assert learner.policy_version == saved["learner"]["policy_version"]
    placement.close()
    (tmp_path / "user_serial" / "done").unlink()  # a finished run trains again with a larger budget
    assert _train(resumed) == "done"
    later = ckpts.load("latest")
    assert later["learner"]["policy_version"] > saved["learner"]["policy_version"]

    from tests.user_algo_example import EVAL_CALLS

    before = EVAL_CALLS[0]
    code = surge.enjoy.main(
        [
            "--env=CartPole-v1",
            f"--train_dir={tmp_path}",
            "--experiment=user_serial",
            "--max_num_episodes=1",
            "--no_render",
        ]
    )
    assert code == 0
    assert EVAL_CALLS[0] > before  # enjoy acted through the algorithm's eval_act


@pytest.mark.slow
def test_async_trains_and_saves_learner_modules_and_both_optimizers(tmp_path):
    cfg = _cfg(tmp_path, "--serial_mode=False", "--experiment=user_async", "--train_for_env_steps=3000")
    assert _train(cfg) == "done"
    saved = CheckpointManager(tmp_path / "user_async" / "checkpoint_p0").load("latest")
    assert saved is not None
    _check_checkpoint(saved)
