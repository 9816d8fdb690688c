"""DQN on the engine (issue 20, "every new algorithm"): an exact serial resume with
`--save_replay_buffer` (weights, target network, Adam and the replay as in a run that never
stopped), `--num_policies=2`, and `surge enjoy` playing the checkpoint greedily."""

from pathlib import Path

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.cli import main as surge_main

N = 3000  # env frames of the whole run; blocks of 4 envs x 16 steps


def _cfg(tmp_path: Path, exp: str, budget: int, *extra: str):
    return parse_cfg(
        [
            "--env=CartPole-v1",
            "--algo=DQN",
            f"--experiment={exp}",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--rollout=16",
            "--recurrence=16",
            "--learning_starts=200",
            "--replay_ratio=0.25",
            "--target_update_interval=500",
            # a schedule over a fraction of --train_for_env_steps differs between the half run and
            # the whole one by construction; a constant epsilon does not
            "--exploration_fraction=0",
            "--exploration_final_eps=0.2",
            "--lr_schedule=constant",  # as epsilon: a decay over the budget differs by construction
            "--encoder_mlp_layers",
            "32",
            "--save_replay_buffer=True",
            "--decorrelate_experience_max_seconds=0",
            "--num_torch_threads=1",
            "--seed=5",
            f"--train_for_env_steps={budget}",
            *extra,
        ]
    )


def _final(tmp_path: Path, exp: str, policy: int = 0) -> dict:
    ckpts = sorted((tmp_path / exp / f"checkpoint_p{policy}").glob("checkpoint_*.pth"))
    return torch.load(ckpts[-1], weights_only=True)


def _same(a, b, path=""):
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{path} differs"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    else:
        assert a == b, f"{path}: {a} != {b}"


def test_serial_resume_with_the_replay_saved_is_exact(tmp_path):
    assert train(_cfg(tmp_path, "whole", N)) == "done"
    assert train(_cfg(tmp_path, "halves", N // 2)) == "done"
    half = _final(tmp_path, "halves")
    assert half["learner"]["policy_version"] > 0 and list(
        (tmp_path / "halves" / "checkpoint_p0").glob("replay_buffer_v*.pth")
    )
    (tmp_path / "halves" / "done").unlink()
    assert train(_cfg(tmp_path, "halves", N)) == "done"
    a, b = _final(tmp_path, "whole"), _final(tmp_path, "halves")
    assert (
        a["env_frames"] == b["env_frames"]
        and a["learner"]["policy_version"] == b["learner"]["policy_version"]
    )
    _same(a["model"], b["model"], "model")
    _same(a["learner_modules"], b["learner_modules"], "target")
    _same(a["learner"]["optimizers"], b["learner"]["optimizers"], "adam")
    assert a["learner"]["replay_counters"]["env_steps"] == b["learner"]["replay_counters"]["env_steps"]
    assert a["learner"]["target_syncs"] == b["learner"]["target_syncs"] > 0
    log = (tmp_path / "halves" / "surge_log.txt").read_text()
    assert "Loaded the replay buffer" in log


def test_two_policies_train_and_enjoy_plays_greedily(tmp_path, capsys):
    assert train(_cfg(tmp_path, "two", 2000, "--num_policies=2", "--save_replay_buffer=False")) == "done"
    for p in (0, 1):
        assert _final(tmp_path, "two", p)["learner"]["policy_version"] > 0
    code = surge_main(
        ["enjoy", "--env=CartPole-v1", "--algo=DQN", f"--train_dir={tmp_path}", "--experiment=two",
         "--max_num_episodes=2", "--no_render", "--policy_index=1"]
    )  # fmt: skip
    assert code == 0
    assert "mean return" in capsys.readouterr().out


def test_bad_dqn_flags_are_refused_before_the_run(tmp_path):
    from surge.errors import ConfigError

    for flag, field in [
        ("--target_update_tau=0", "target_update_tau"),
        ("--exploration_final_eps=1.5", "exploration_final_eps"),
        ("--v_min=20", "v_max"),
        ("--use_rnn=True", "use_rnn"),
    ]:
        with pytest.raises(ConfigError) as e:
            _cfg(tmp_path, "bad", 100, flag)
        assert e.value.field == field


@pytest.mark.slow
def test_async_two_policies_train(tmp_path):
    cfg = _cfg(
        tmp_path, "async2", 4000, "--num_policies=2", "--serial_mode=False", "--num_workers=2",
        "--save_replay_buffer=False", "--set_workers_cpu_affinity=False",
    )  # fmt: skip
    assert train(cfg) == "done"
    for p in (0, 1):
        state = _final(tmp_path, "async2", p)
        assert state["learner"]["policy_version"] > 0 and state["learner"]["replay_counters"]["env_steps"] > 0
