"""R2D2 on the engine (issue 20, "every new algorithm"): an exact serial resume with
`--save_replay_buffer` (weights, target network, Adam and the sequence replay as in a run that
never stopped), `--num_policies=2` in the serial and the async placement, `surge enjoy` playing
the checkpoint greedily with its recurrent state, and its flags refused before the run."""

from pathlib import Path

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.cli import main as surge_main
from surge.errors import ConfigError

N = 896  # env frames of the whole run: 8 blocks of 4 envs x 28 steps


def _cfg(tmp_path: Path, exp: str, budget: int, *extra: str):
    return parse_cfg(
        [
            "--env=memory_cue",
            "--algo=R2D2",
            f"--experiment={exp}",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--rollout=28",
            "--recurrence=28",
            "--burn_in=2",
            "--sequence_length=5",
            "--store_rnn_state_interval=4",
            "--n_step_return=2",
            "--batch_size=8",
            "--prioritized_replay=True",
            "--replay_size=2000",
            "--learning_starts=200",
            "--replay_ratio=0.1",
            "--target_update_interval=300",
            "--hidden_size=16",
            "--encoder_mlp_layers",
            "16",
            "--save_replay_buffer=True",
            "--decorrelate_experience_max_seconds=0",
            "--num_torch_threads=1",
            "--write_report=False",
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


@pytest.mark.slow
def test_r2d2_serial_resume_with_the_replay_saved_is_exact(tmp_path):
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
    assert a["learner"]["target_syncs"] == b["learner"]["target_syncs"] > 0
    assert "Loaded the replay buffer" in (tmp_path / "halves" / "surge_log.txt").read_text()


def test_r2d2_two_policies_train_and_enjoy_plays_greedily(tmp_path, capsys):
    assert train(_cfg(tmp_path, "two", 672, "--num_policies=2", "--save_replay_buffer=False")) == "done"
    for p in (0, 1):
        assert _final(tmp_path, "two", p)["learner"]["policy_version"] > 0
    code = surge_main(
        ["enjoy", "--env=memory_cue", "--algo=R2D2", f"--train_dir={tmp_path}", "--experiment=two",
         "--max_num_episodes=2", "--no_render", "--policy_index=1"]
    )  # fmt: skip
    assert code == 0
    assert "mean return" in capsys.readouterr().out


def test_bad_r2d2_flags_are_refused_before_the_run(tmp_path):
    for flag, field in [
        ("--use_rnn=False", "use_rnn"),
        ("--priority_eta=1.5", "priority_eta"),
        ("--sequence_length=0", "sequence_length"),
        ("--value_rescale_eps=-1", "value_rescale_eps"),
        ("--store_rnn_state_interval=0", "store_rnn_state_interval"),
    ]:
        with pytest.raises(ConfigError) as e:
            _cfg(tmp_path, "bad", 100, flag)
        assert e.value.field == field


@pytest.mark.slow
def test_r2d2_async_two_policies_train(tmp_path):
    cfg = _cfg(
        tmp_path, "async2", 1120, "--num_policies=2", "--serial_mode=False", "--num_workers=2",
        "--save_replay_buffer=False", "--set_workers_cpu_affinity=False",
    )  # fmt: skip
    assert train(cfg) == "done"
    for p in (0, 1):
        state = _final(tmp_path, "async2", p)
        assert state["learner"]["policy_version"] > 0 and state["learner"]["replay_counters"]["env_steps"] > 0
