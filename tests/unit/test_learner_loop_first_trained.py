"""`LearnerLoop` logs the end of start-up once: after the first batch whose training moved the
policy version past where this run started (a resumed run starts above 0; a batch whose steps
were all skipped moves nothing)."""

import logging
import types

import torch

from surge.runtime.learner_loop import LearnerLoop


class _Learner:
    def __init__(self, version: int):
        self.policy_version = version
        self.steps_next = 0  # optimizer steps the next batch takes

    def train_batch(self, batch, env_frames=0):  # type: ignore[no-untyped-def]
        self.policy_version += self.steps_next
        return {}


def _lines(caplog):
    return [r.getMessage() for r in caplog.records if "first batch trained" in r.getMessage()]


def test_logged_once_after_the_first_step_of_a_resumed_run(caplog):
    learner = _Learner(version=40)  # resumed from a checkpoint at policy version 40
    loop = LearnerLoop(torch.nn.Linear(1, 1), types.SimpleNamespace(), 0)
    loop.learner = learner  # type: ignore[assignment]
    with caplog.at_level(logging.INFO, logger="surge"):
        loop.train({}, 0)  # every step skipped: still at 40
        assert _lines(caplog) == []
        learner.steps_next = 3
        loop.train({}, 0)
        loop.train({}, 0)
    assert _lines(caplog) == ["LearnerLoop: first batch trained (policy 0, policy version 43)"]
