"""A frozen policy through a restart (issue 59, item 3), serial placement: `--frozen_policies
1:random` without `--seed` draws its weights at the start, unseeded; a resumed run must play
against the same policy, not a new draw (before: it drew again, so the learner's opponent changed
at every restart).

- SIGINT at a seeded random moment after the first checkpoint (sent to this process, whose run's
  handler stops it cleanly), then the same command: the frozen policy acts with the weights it had.
- SIGKILL (a run in a subprocess) at such a moment: the resumed frozen policy's weights are those
  the killed run started with (`frozen_p1.pth`, written before its first step).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest
import torch
from restart_kill import UNREACHED, kill_if_running, resume_budget, start, stop_after_first_checkpoint

import surge.app.training_run as training_run
from surge.app.resolve import parse_cfg

ARGS = [
    "--env=CartPole-v1",
    "--experiment=frozen",
    "--num_policies=2",
    "--frozen_policies",
    "1:random",
    "--num_workers=1",
    "--num_envs_per_worker=4",
    "--rollout=16",
    "--recurrence=16",
    "--batch_size=64",
    "--use_rnn=False",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "16",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
    "--serial_mode=True",
    "--num_torch_threads=1",
    "--write_report=False",
    "--save_every_sec=1",
]


def _spy_frozen(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, torch.Tensor]]:
    """The frozen policy 1's weights right after each run set them."""
    seen: list[dict[str, torch.Tensor]] = []
    original = training_run.apply_frozen_sources

    def spy(cfg, placement, *args):
        original(cfg, placement, *args)
        seen.append(placement.policy_weights(1)[0])

    monkeypatch.setattr(training_run, "apply_frozen_sources", spy)
    return seen


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _ctrl_c_after_first_checkpoint(folder: Path, seed: int) -> threading.Thread:
    def send() -> None:
        while not list((folder / "checkpoint_p0").glob("checkpoint_*.pth")):
            time.sleep(0.05)
        time.sleep(random.Random(seed).uniform(0.0, 1.0))
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_ctrl_c_at_a_random_moment_then_resume_keeps_the_frozen_policys_weights(tmp_path, monkeypatch):
    seen = _spy_frozen(monkeypatch)
    args = [*ARGS, f"--train_dir={tmp_path}"]
    _ctrl_c_after_first_checkpoint(tmp_path / "frozen", seed=7)  # a thread: sends SIGINT on its own
    assert training_run.train(parse_cfg([*args, f"--train_for_env_steps={UNREACHED}"])) == "interrupted"
    budget = f"--train_for_env_steps={resume_budget(tmp_path / 'frozen')}"
    assert training_run.train(parse_cfg([*args, budget])) == "done"
    assert len(seen) == 2
    assert _equal(seen[0], seen[1])


@pytest.mark.slow
def test_sigkill_at_a_random_moment_then_resume_keeps_the_frozen_policys_weights(tmp_path, monkeypatch):
    folder = tmp_path / "frozen"
    proc = start([*ARGS, f"--train_for_env_steps={UNREACHED}"], tmp_path)
    try:
        stop_after_first_checkpoint(proc, folder, signal.SIGKILL, seed=8, max_delay=1.5)
    finally:
        kill_if_running(proc)
    started = torch.load(folder / "frozen_p1.pth", weights_only=True)["model"]
    seen = _spy_frozen(monkeypatch)
    budget = f"--train_for_env_steps={resume_budget(folder)}"
    assert training_run.train(parse_cfg([*ARGS, f"--train_dir={tmp_path}", budget])) == "done"
    assert _equal(seen[0], started)
