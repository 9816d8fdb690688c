"""Evaluation state through a restart (issue 59, item 3), serial placement: with
`--save_best_by_eval=True` the best mean eval return so far (kept as "eval_return" in the `best`
checkpoint, which holds the weights that scored it) decides whether a later evaluation writes a new
best; the evaluation schedule (every `--eval_every_env_frames`) follows the env frames restored.

- SIGINT (sent to this process) and SIGKILL (a run in a subprocess), each at a seeded random
  moment after the first checkpoint: the resumed evaluator starts from the best eval return of the
  `best` checkpoint the stopped run left, and its next evaluation falls at the next multiple of
  `--eval_every_env_frames` after the restored frames.
"""

from __future__ import annotations

import math
import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest
from restart_kill import UNREACHED, kill_if_running, resume_budget, start, stop_after_first_checkpoint

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.evaluation.train_eval import TrainEvaluator
from surge.runtime.checkpoint import CheckpointManager

EVERY = 256
ARGS = [
    "--env=CartPole-v1",
    "--experiment=ev",
    "--num_workers=1",
    "--num_envs_per_worker=4",
    "--rollout=16",
    "--batch_size=64",
    "--use_rnn=False",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
    "--serial_mode=True",
    "--num_torch_threads=1",
    "--write_report=False",
    "--seed=4",
    "--eval_episodes=2",
    f"--eval_every_env_frames={EVERY}",
    "--save_best_by_eval=True",
    "--save_every_sec=1",
]


def _saved_best(folder: Path) -> float:
    state = CheckpointManager(folder / "checkpoint_p0", 2, 0).load("best")
    assert state is not None and "eval_return" in state, "no evaluation before the stop: raise the delay"
    return float(state["eval_return"])


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, int, int]]:
    """(policy 0's best eval return, next evaluation's env frame, the run's env frames) of each
    evaluator made, right after it was made."""
    seen: list[tuple[float, int, int]] = []
    original = TrainEvaluator.__init__

    def spy(self: TrainEvaluator, run) -> None:
        original(self, run)
        best = self.best.best[0] if getattr(self, "best", None) is not None else math.nan
        seen.append((best, self.next_at, run.monitor.env_frames))

    monkeypatch.setattr(TrainEvaluator, "__init__", spy)
    return seen


def _check(seen: list[tuple[float, int, int]], saved: float) -> None:
    best, next_at, frames = seen[-1]
    assert frames > 0  # resumed
    assert best == saved
    assert next_at == (frames // EVERY + 1) * EVERY


@pytest.mark.slow
def test_ctrl_c_at_a_random_moment_then_resume_keeps_the_best_eval_return(tmp_path, monkeypatch):
    folder = tmp_path / "ev"

    def send() -> None:
        while not list((folder / "checkpoint_p0").glob("checkpoint_*.pth")):
            time.sleep(0.05)
        time.sleep(random.Random(9).uniform(0.5, 1.5))
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=send, daemon=True).start()
    args = [*ARGS, f"--train_dir={tmp_path}"]
    assert train(parse_cfg([*args, f"--train_for_env_steps={UNREACHED}"])) == "interrupted"
    saved = _saved_best(folder)
    seen = _spy(monkeypatch)
    assert train(parse_cfg([*args, f"--train_for_env_steps={resume_budget(folder)}"])) == "done"
    _check(seen, saved)


@pytest.mark.slow
def test_sigkill_at_a_random_moment_then_resume_keeps_the_best_eval_return(tmp_path, monkeypatch):
    folder = tmp_path / "ev"
    proc = start([*ARGS, f"--train_for_env_steps={UNREACHED}"], tmp_path)
    try:
        stop_after_first_checkpoint(proc, folder, signal.SIGKILL, seed=10, max_delay=1.5)
    finally:
        kill_if_running(proc)
    saved = _saved_best(folder)
    seen = _spy(monkeypatch)
    budget = f"--train_for_env_steps={resume_budget(folder)}"
    assert train(parse_cfg([*ARGS, f"--train_dir={tmp_path}", budget])) == "done"
    _check(seen, saved)
