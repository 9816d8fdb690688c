"""Ranges declared on the config's fields (`param(..., low=, high=)`) generate their checks and
messages (`surge.cfg.fields`): the core flags keep the messages they had when written by hand, and a
field declared with a range is checked without any code of its own."""

import dataclasses
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from surge.app.resolve import parse_cfg
from surge.cfg.config import core_fields, param
from surge.cfg.fields import check_ranges, range_of
from surge.errors import ConfigError

#: the sizes and counts whose check was a hand-written list before their ranges were declared
COUNTS = {
    "rollout",
    "recurrence",
    "batch_size",
    "num_batches_per_iteration",
    "num_workers",
    "num_envs_per_worker",
    "worker_num_splits",
    "num_policies",
    "min_traj_buffers_per_worker",
    "hidden_size",
    "rnn_num_layers",
    "keep_checkpoints",
    "sample_env_frames",
}
SECONDS = {
    "decorrelate_experience_max_seconds",
    "reset_timeout_seconds",
    "save_every_sec",
    "save_best_every_sec",
    "experiment_summaries_interval",
}


def test_the_core_sizes_and_durations_declare_their_ranges():
    ranges = {f.name: range_of(f) for f in core_fields() if range_of(f) is not None}
    assert {n for n, r in ranges.items() if r.count} == COUNTS
    assert SECONDS <= {n for n, r in ranges.items() if r.high is not None}
    assert {"max_grad_norm", "max_policy_lag"} <= {n for n, r in ranges.items() if r.why}


@pytest.mark.parametrize(
    "flag, problem, fix",
    [
        ("--rollout=0", "must be a positive integer, got 0.", "pass --rollout=N with N >= 1."),
        (
            "--keep_checkpoints=-2",
            "must be a positive integer, got -2.",
            "pass --keep_checkpoints=N with N >= 1.",
        ),
        (
            "--max_grad_norm=-1",
            "must be >= 0, got -1.0 (0 turns clipping off; a negative norm would scale every gradient to 0).",
            "pass --max_grad_norm >= 0.",
        ),
        (
            "--reset_timeout_seconds=0",
            "a time in seconds in [1, 9.22e+09], got 0.",
            "pass --reset_timeout_seconds between 1 and 9.22e+09, e.g. 120.",
        ),
        (
            "--save_every_sec=-1",
            "a time in seconds in [0, 9.22e+09], got -1.",
            "pass --save_every_sec between 0 and 9.22e+09.",
        ),
    ],
)
def test_a_value_out_of_its_declared_range_gets_the_generated_message(flag, problem, fix, tmp_path):
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", flag])
    assert e.value.field == flag[2:].split("=")[0]
    assert e.value.problem == problem
    assert e.value.fix == fix


def test_a_new_field_with_a_range_is_checked_without_code_of_its_own():
    @dataclass
    class Section:
        workers: int = param(2, "Workers.", low=1)
        wait: float = param(1.0, "Seconds to wait.", low=0, high=60, unit="time in seconds")
        scale: float = param(1.0, "A scale.", low=0, why="a negative scale flips the sign")

    fields = dataclasses.fields(Section)
    check_ranges(Section(), fields, count=True)
    check_ranges(Section(), fields, count=False)
    with pytest.raises(ConfigError, match="must be a positive integer, got True"):
        check_ranges(SimpleNamespace(workers=True, wait=1.0, scale=1.0), fields, count=True)
    with pytest.raises(ConfigError, match=r"a time in seconds in \[0, 60\], got 61"):
        check_ranges(SimpleNamespace(workers=2, wait=61, scale=1.0), fields, count=False)
    with pytest.raises(ConfigError, match=r"must be >= 0, got -1 \(a negative scale flips the sign\)"):
        check_ranges(SimpleNamespace(workers=2, wait=1.0, scale=-1), fields, count=False)
