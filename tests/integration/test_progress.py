"""Progress and torch threads of a run (issue 24, items 7 and 10): the progress line keeps coming
while the serial placement trains a long batch; every process that runs a model uses one torch
thread by default (torch's own count, one per core, crawls on a loaded machine: docs/threads.md),
and the run's log says how many threads each process uses."""

import logging
import re
import time

import pytest

from surge.algorithms.appo.learner import Learner
from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun
from tests.run_logged import run_logged

STEP_SEC = 0.25  # a slow optimizer step, so one batch takes longer than the report interval


def test_the_progress_line_comes_while_the_serial_placement_trains_a_long_batch(
    tmp_path, monkeypatch, caplog
):
    original = Learner._step

    def slow_step(self, mb, vtrace_mode):
        logging.getLogger("surge").info("optimizer step")
        time.sleep(STEP_SEC)
        return original(self, mb, vtrace_mode)

    monkeypatch.setattr(Learner, "_step", slow_step)
    # one batch of 4 x 32 = 128 samples: 4 minibatches x 2 epochs = 8 steps, 2 s in all
    cfg = parse_cfg(
        [
            "--env=CartPole-v1", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=4",
            "--rollout=32", "--batch_size=32", "--num_batches_per_iteration=4", "--ppo_epochs=2",
            "--train_for_env_steps=128", "--report_interval_sec=0.5", "--no_writes=True",
            f"--train_dir={tmp_path}", "--experiment=p",
        ]
    )  # fmt: skip
    status, msgs = run_logged(cfg, caplog)
    assert status == "done"
    steps = [i for i, m in enumerate(msgs) if m == "optimizer step"]
    assert len(steps) == 8
    # the serial placement's process uses one torch thread by default, and says so once
    assert [m for m in msgs if "torch intra-op thread" in m] == [
        "Serial placement: 1 torch intra-op thread(s) in this process (envs, inference and learning; "
        "--num_torch_threads, docs/threads.md)"
    ]
    during = [m for m in msgs[steps[0] : steps[-1]] if m.startswith("Env frames/s")]
    # 1.75 s from the first step to the last, a line every 0.5 s: 3, at least 2 on a busy machine
    assert len(during) >= 2, msgs
    assert all(re.search(r"Total env frames: \d+ \(\d+\.\d% of 128, ETA ", m) for m in during), during


def _thread_lines(log_text: str) -> dict[str, int]:
    return {m[0]: int(m[1]) for m in re.findall(r"Process (\S+): (\d+) torch intra-op thread", log_text)}


@pytest.mark.slow  # an async run's start: over 5 s on an idle 2-core machine
def test_every_async_process_uses_one_torch_thread_by_default_and_says_so(tmp_path):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1", "--serial_mode=False", "--num_workers=1", "--num_envs_per_worker=2",
            "--rollout=16", "--batch_size=32", "--train_for_env_steps=64",
            "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
            f"--train_dir={tmp_path}", "--experiment=t",
        ]
    )  # fmt: skip
    assert TrainingRun(cfg).run() == "done"
    # each process says what torch.get_num_threads() gives after its set-up, once, in the run's
    # log (before: the learner kept torch's own count, one thread per core: 2 on 2 cores)
    text = (tmp_path / "t" / "surge_log.txt").read_text()
    assert len(re.findall(r"Process \S+: \d+ torch intra-op thread", text)) == 3
    threads = _thread_lines(text)
    assert threads == {"learner_p0": 1, "inference_p0_0": 1, "rollout_0": 1}, threads
