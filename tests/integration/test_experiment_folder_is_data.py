"""An experiment folder is data, not code (issue 55): resuming from a folder crafted to run code
when unpickled (a shared or downloaded one) runs nothing and says why it refused the files:

- `sampler_state.pth` whose env states are pickles (as surge wrote them before the plain-value
  format of `surge.sampling.env_state`);
- a replay file holding a pickled object (`--save_replay_buffer`);
- a checkpoint whose `replay_file` names a file outside its folder (refused even when that file is a
  valid replay)."""

import copy
import logging
import pickle
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `tests.replay_tiny_algo` as the command line names it
    sys.path.insert(0, str(ROOT))

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.app.training_run import train  # noqa: E402
from tests.replay_tiny_algo import LinearQ, TinyLearner  # noqa: E402


class WritesMarker:
    """Unpickling it creates the file `path` (what a crafted file would do with a shell command)."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _pickle_tensor(obj) -> torch.Tensor:
    return torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8)


def _serial_cfg(tmp_path: Path, budget: int):
    return parse_cfg(
        [
            "--env=cartpole",
            "--experiment=shared",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--seed=3",
            f"--train_for_env_steps={budget}",
        ]
    )


def test_a_sampler_state_with_pickled_envs_runs_nothing_on_resume(tmp_path):
    marker = tmp_path / "code_ran"
    assert train(_serial_cfg(tmp_path, 200)) == "done"
    path = tmp_path / "shared" / "sampler_state.pth"
    state = torch.load(path, weights_only=True)
    for worker in state["workers"]:
        for split in worker["splits"]:  # the format of surge before: (env, extra) pickled
            split["envs"] = [_pickle_tensor((WritesMarker(marker), {})) for _ in split["envs"]]
    torch.save(state, path)
    (tmp_path / "shared" / "done").unlink()

    assert train(_serial_cfg(tmp_path, 400)) == "done"

    assert not marker.exists(), "resuming the crafted folder ran its code"
    log = (tmp_path / "shared" / "surge_log.txt").read_text()
    assert "Not resuming the envs from the sampler state" in log
    assert "saved as a pickle" in log and "not loaded" in log


ARGS = [
    "--env=CartPole-v1",
    "--algo=tests.replay_tiny_algo:TINY_REPLAY",
    "--num_workers=1",
    "--num_envs_per_worker=2",
    "--rollout=8",
    "--recurrence=8",
    "--use_rnn=False",
    "--num_torch_threads=1",
    "--seed=1",
    "--save_replay_buffer=True",
    "--learning_starts=1000",
]


def _learner(train_dir: Path, experiment: str = "shared"):
    cfg = parse_cfg([*ARGS, f"--train_dir={train_dir}", f"--experiment={experiment}"])
    return TinyLearner(cfg, LinearQ(4, 2), None, torch.device("cpu"), 0, num_columns=4)


def _folder(train_dir: Path, experiment: str = "shared") -> Path:
    return train_dir / experiment / "checkpoint_p0"


def _filled(train_dir: Path, experiment: str = "shared") -> tuple[TinyLearner, dict]:
    """A learner with 16 steps in its replay and its checkpoint state (the replay file written)."""
    a = _learner(train_dir, experiment)
    g = torch.Generator().manual_seed(0)
    a.observe(
        {
            "obs": torch.randn(9, 2, 4, generator=g),
            "actions": torch.randint(2, (8, 2), generator=g),
            "rewards": torch.ones(8, 2),
            "dones": torch.zeros(8, 2),
            "trunc": torch.zeros(8, 2),
            "is_active": torch.ones(8, 2, dtype=torch.bool),
            "behavior_version": torch.zeros(8, 2, dtype=torch.int64),
            "actor_ids": torch.tensor([0, 1]),
        }
    )
    return a, copy.deepcopy(a.state_dict())


@pytest.fixture
def surge_errors(caplog):
    with caplog.at_level(logging.WARNING, logger="surge"):
        yield caplog


def test_a_replay_file_holding_a_pickled_object_runs_nothing(tmp_path, surge_errors):
    a, state = _filled(tmp_path)
    marker = tmp_path / "code_ran"
    torch.save({"replay": WritesMarker(marker)}, _folder(tmp_path) / state["replay_file"])

    b = _learner(tmp_path)
    b.load_state_dict(state)

    assert not marker.exists(), "loading the crafted replay file ran its code"
    assert len(b.replay) == 0
    assert "Not loading the replay buffer" in surge_errors.text
    assert "holds objects other than tensors and plain values" in surge_errors.text


@pytest.mark.parametrize("outside", ["absolute", "dotdot"])
def test_a_replay_file_outside_the_checkpoint_folder_is_refused(tmp_path, surge_errors, outside):
    other, other_state = _filled(tmp_path, "other")  # a valid replay file, in another experiment
    elsewhere = _folder(tmp_path, "other") / other_state["replay_file"]
    a, state = _filled(tmp_path)
    state["replay_file"] = (
        str(elsewhere) if outside == "absolute" else f"../../other/checkpoint_p0/{elsewhere.name}"
    )

    b = _learner(tmp_path)
    b.load_state_dict(state)

    assert len(b.replay) == 0, "the replay was read from outside the checkpoint folder"
    assert "Not loading the replay buffer" in surge_errors.text
    assert "which is not a file of its folder" in surge_errors.text


def test_a_replay_file_named_by_an_earlier_versions_absolute_path_in_its_folder_loads(tmp_path):
    a, state = _filled(tmp_path)
    state["replay_file"] = str((_folder(tmp_path) / state["replay_file"]).absolute())
    b = _learner(tmp_path)
    b.load_state_dict(state)
    assert len(b.replay) == len(a.replay) == 16
