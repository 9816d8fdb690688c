"""Replay buffers saved with `--save_replay_buffer=True` through a restart (issue 59, item 3),
serial placement: the contents, the priorities (DQN's prioritized replay: the sum tree), the n-step
windows (DQN `--n_step_return=3`) and the sequence positions (R2D2's stored RNN states and cursors).

- SIGINT at a seeded random moment after the first checkpoint, then the same command (in a
  subprocess, as a user's Ctrl+C): the run ends as the run that never stopped, replay included.
- SIGKILL at such a moment: the resumed learner's replay is, tensor for tensor, the replay file
  the latest checkpoint names (saved with it, before it: a kill between the two leaves the
  previous checkpoint and its own file).
"""

from __future__ import annotations

import copy
import signal
from pathlib import Path
from typing import Any

import pytest
import torch
from restart_kill import UNREACHED, kill_if_running, resume_budget, run, start, stop_after_first_checkpoint

from surge.learning import replay_learner
from surge.learning.replay_learner import ReplayLearnerBase

# fmt: off
COMMON = [
    "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=4", "--worker_num_splits=2",
    "--rollout=8", "--recurrence=8", "--learning_starts=64", "--replay_size=500", "--batch_size=16",
    "--replay_ratio=0.25", "--decorrelate_experience_max_seconds=0", "--num_torch_threads=1",
    "--write_report=False", "--seed=3", "--save_replay_buffer=True", "--save_every_sec=1",
    "--experiment=replay", "--set_workers_cpu_affinity=False",
]
ALGOS = {
    "DQN": ["--algo=DQN", "--env=CartPole-v1", "--encoder_mlp_layers", "16", "--target_update_interval=100",
            "--n_step_return=3", "--prioritized_replay=True"],
    "R2D2": [
        "--algo=R2D2", "--env=memory_cue", "--burn_in=2", "--sequence_length=5", "--store_rnn_state_interval=4",
        "--n_step_return=2", "--hidden_size=16", "--encoder_mlp_layers", "16", "--target_update_interval=100",
    ],
}
# fmt: on
SIGINT_BUDGET = 8000


def _assert_same(a: Any, b: Any, path: str = "") -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), path  # NaN marks the slots not filled yet: equal too
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=path)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            _assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a} != {b}"


def _latest(folder: Path) -> dict:
    return torch.load(sorted((folder / "checkpoint_p0").glob("checkpoint_*.pth"))[-1], weights_only=True)


@pytest.mark.slow
def test_ctrl_c_at_a_random_moment_then_resume_ends_as_the_run_that_never_stopped(tmp_path):
    # one budget for the three runs (DQN's epsilon decays over it), one a fast machine takes more
    # than the first checkpoint and the longest delay to reach
    args = [*COMMON, *ALGOS["DQN"], f"--train_for_env_steps={SIGINT_BUDGET}"]
    proc = start(args, tmp_path / "stopped")
    try:
        stop_after_first_checkpoint(
            proc, tmp_path / "stopped" / "replay", signal.SIGINT, seed=5, max_delay=1.0
        )
    finally:
        kill_if_running(proc)
    resumed = run(args, tmp_path / "stopped")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    done = run(args, tmp_path / "ref")
    assert done.returncode == 0, done.stderr[-3000:]
    b = tmp_path / "stopped" / "replay"
    log = (b / "surge_log.txt").read_text()
    assert "Resumed the sampler where it stopped" in log and "Loaded the replay buffer" in log
    x, y = _latest(tmp_path / "ref" / "replay"), _latest(b)
    assert x["learner"].pop("replay_file") == y["learner"].pop("replay_file")
    for key in ("model", "learner", "learner_modules", "rng"):
        _assert_same(x.get(key), y.get(key), key)
    folder = "checkpoint_p0"
    name = sorted((b / folder).glob("replay_buffer_*.pth"), key=lambda f: f.stat().st_mtime)[-1].name
    ref_replay = torch.load(tmp_path / "ref" / "replay" / folder / name, weights_only=True)
    _assert_same(ref_replay, torch.load(b / folder / name, weights_only=True), "replay file")


@pytest.mark.slow
@pytest.mark.parametrize("algo", list(ALGOS))
def test_sigkill_at_a_random_moment_then_resume_loads_the_replay_saved_with_the_checkpoint(
    tmp_path, monkeypatch, algo
):
    args = [*COMMON, *ALGOS[algo]]
    folder = tmp_path / "replay"
    proc = start([*args, f"--train_for_env_steps={UNREACHED}"], tmp_path)
    try:
        stop_after_first_checkpoint(proc, folder, signal.SIGKILL, seed=6, max_delay=1.5)
    finally:
        kill_if_running(proc)
    latest = _latest(folder)
    saved = torch.load(folder / "checkpoint_p0" / latest["learner"]["replay_file"], weights_only=True)

    # the resume runs in this process to see the learner's replay right after it was loaded
    from surge.app.resolve import parse_cfg
    from surge.app.training_run import train

    loaded: list[dict] = []
    original = ReplayLearnerBase.load_state_dict

    def spy(self: ReplayLearnerBase, state: dict, keep_version: bool = False) -> None:
        original(self, state, keep_version)
        # a copy: the state holds the replay's own tensors, which the resumed run goes on filling
        loaded.append(copy.deepcopy(replay_learner._ReplayWithVersions(self).state_dict()))

    monkeypatch.setattr(ReplayLearnerBase, "load_state_dict", spy)
    cfg = parse_cfg([*args, f"--train_dir={tmp_path}", f"--train_for_env_steps={resume_budget(folder, 500)}"])
    assert train(cfg) == "done"
    assert "Loaded the replay buffer" in (folder / "surge_log.txt").read_text()
    assert loaded, "no learner state was loaded"
    _assert_same(saved, loaded[0], "replay")
    assert not list(folder.rglob("*.tmp")), "an unfinished replay write was left behind"
