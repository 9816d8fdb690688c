"""A checkpoint of another network (an older surge's, or one trained with other model flags) is
refused with a `CheckpointMismatch` that names the checkpoint and what differs: in the async
placement before any process starts, in the serial placement, in `surge enjoy` and in the
exporter's loader. Before, `load_state_dict`'s RuntimeError surfaced in a learner process after
every worker had started."""

import multiprocessing
from pathlib import Path

import pytest
import torch
from torch import nn

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.cli import main as surge_main
from surge.runtime.checkpoint_fit import CheckpointMismatch, check_fits, state_differences


def _strict_load_fails(module: nn.Module, state: dict) -> bool:
    try:
        module.load_state_dict(state)
    except RuntimeError:
        return True
    return False


@pytest.mark.parametrize(
    "edit",
    ["same", "drop", "extra", "rename", "shape"],
)
def test_check_fits_refuses_exactly_what_a_strict_load_refuses(edit):
    built = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    state = {
        k: v.clone()
        for k, v in nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).state_dict().items()
    }
    if edit == "drop":
        state.pop("2.bias")
    elif edit == "extra":
        state["3.weight"] = torch.zeros(2, 2)
    elif edit == "rename":
        state["0.wt"] = state.pop("0.weight")
    elif edit == "shape":
        state["2.weight"] = torch.zeros(3, 8)
    reference = _strict_load_fails(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), state)
    assert bool(state_differences(built, state)) == reference == (edit != "same")
    if reference:
        with pytest.raises(CheckpointMismatch) as e:
            check_fits(built, state, "the test checkpoint")
        assert "the test checkpoint" in str(e.value)
        named = {
            "drop": "2.bias",
            "extra": "3.weight",
            "rename": "0.wt",
            "shape": "2.weight (3, 8) saved, (2, 8) built",
        }
        assert named[edit] in str(e.value)
    else:
        check_fits(built, state, "the test checkpoint")


def _dqn(tmp_path: Path, budget: int, serial: bool, *extra: str):
    return parse_cfg(
        [
            "--env=CartPole-v1",
            "--algo=DQN",
            "--experiment=exp",
            f"--train_dir={tmp_path}",
            f"--serial_mode={serial}",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--rollout=16",
            "--learning_starts=200",
            "--encoder_mlp_layers",
            "32",
            "--decorrelate_experience_max_seconds=0",
            "--num_torch_threads=1",
            "--seed=3",
            f"--train_for_env_steps={budget}",
            *extra,
        ]
    )


@pytest.fixture(scope="module")
def plain_dqn_run(tmp_path_factory):
    """A finished serial DQN run on CartPole (plain Q head), 1000 env frames."""
    tmp = tmp_path_factory.mktemp("fit")
    assert train(_dqn(tmp, 1000, True, "--dueling=False")) == "done"
    (tmp / "exp" / "done").unlink()  # so that a longer budget resumes it
    return tmp


@pytest.mark.parametrize("serial", [False, True], ids=["async", "serial"])
def test_resuming_with_another_q_head_is_refused_naming_the_checkpoint(plain_dqn_run, serial):
    before = sorted(p.name for p in (plain_dqn_run / "exp" / "checkpoint_p0").iterdir())
    with pytest.raises(CheckpointMismatch) as e:
        train(_dqn(plain_dqn_run, 2000, serial, "--dueling=True"))
    msg = str(e.value)
    assert "policy 0's checkpoint (model)" in msg and "missing from the checkpoint" in msg
    assert "--restart_behavior=overwrite" in msg
    # refused before anything started or was written: no process, the checkpoints untouched
    assert multiprocessing.active_children() == []
    assert sorted(p.name for p in (plain_dqn_run / "exp" / "checkpoint_p0").iterdir()) == before


def test_enjoy_refuses_a_checkpoint_of_another_network(plain_dqn_run, capsys):
    ckpt = sorted((plain_dqn_run / "exp" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    state = torch.load(ckpt, weights_only=True)
    state["model"] = {k.replace("weight", "wt", 1): v for k, v in state["model"].items()}
    bad = plain_dqn_run / "other_net.pth"
    torch.save(state, bad)
    common = ["--env=CartPole-v1", "--experiment=exp", f"--train_dir={plain_dqn_run}"]
    rc = surge_main(["enjoy", *common, f"--checkpoint_path={bad}", "--no_render", "--max_num_episodes=1"])
    err = capsys.readouterr().err
    assert (
        rc == 2
        and f"the checkpoint {bad} (model)" in err
        and "in the checkpoint but not in this network" in err
    )


def test_the_exporter_refuses_a_checkpoint_of_another_network(tmp_path):
    from surge.export.load import load_policy

    cfg = parse_cfg(
        ["--env=CartPole-v1", "--experiment=exp", f"--train_dir={tmp_path}", "--serial_mode=True",
         "--num_workers=1", "--num_envs_per_worker=2", "--train_for_env_steps=500", "--ppo_epochs=1",
         "--encoder_mlp_layers", "16", "--hidden_size=16", "--decorrelate_experience_max_seconds=0"]
    )  # fmt: skip
    assert train(cfg) == "done"
    ckpt = sorted((tmp_path / "exp" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    assert load_policy(str(tmp_path), "exp").model is not None  # the run's own checkpoint loads
    state = torch.load(ckpt, weights_only=True)
    state["model"] = {k.replace("weight", "wt", 1): v for k, v in state["model"].items()}
    torch.save(state, ckpt)
    with pytest.raises(CheckpointMismatch, match=ckpt.name):
        load_policy(str(tmp_path), "exp")
