"""Two of Sample Factory's meanings the seed lines rely on (issue 58):

- its dummy sampler has no splits, so `--algo=DUMMY_SAMPLER --num_envs_per_worker=1` runs (the
  refusal stays for a learning algorithm and for splits that were asked for);
- `--benchmark=True` is Sample Factory 1's benchmark mode (appo.py `_should_end_training`: the run
  ends after 2M env steps since its resume or 1M samples; actor_worker.py: no decorrelation pause),
  and still writes its folder; surge's former meaning, "write nothing", is `--no_writes=True`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import surge.cfg.budget as budget
from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun
from surge.cfg.cli import default_notes
from surge.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
#: the seed's dummy-sampler line (Sample Factory's README), its workers cut
DUMMY = ["--algo=DUMMY_SAMPLER", "--env=doom_benchmark", "--num_workers=2", "--sample_env_frames=5000000"]


def test_dummy_sampler_with_one_env_per_worker_has_no_splits(tmp_path):
    base = [*DUMMY, f"--train_dir={tmp_path}", "--experiment=d"]
    cfg = parse_cfg([*base, "--num_envs_per_worker=1"])
    assert cfg.worker_num_splits == 1
    assert any("--worker_num_splits=1 chosen for DUMMY_SAMPLER" in n for n in default_notes(cfg))
    # an even count keeps Sample Factory's two splits (surge bench's layout unchanged)
    assert parse_cfg([*base, "--num_envs_per_worker=4"]).worker_num_splits == 2
    assert default_notes(parse_cfg([*base, "--num_envs_per_worker=4"])) == []
    # splits that were asked for are not overridden: the refusal names them
    with pytest.raises(ConfigError) as e:
        parse_cfg([*base, "--num_envs_per_worker=1", "--worker_num_splits=2"])
    assert e.value.field == "num_envs_per_worker" and "--worker_num_splits=1" in e.value.fix
    # a learning algorithm keeps Sample Factory's refusal (its README: "must be even")
    with pytest.raises(ConfigError):
        parse_cfg(["--env=doom_benchmark", f"--train_dir={tmp_path}", "--num_envs_per_worker=1"])


def test_benchmark_end_is_sample_factorys():
    cfg = parse_cfg(["--env=cartpole", "--benchmark=True", "--train_dir=/tmp/unused"])
    # appo.py: `total_env_steps_since_resume >= int(2e6)` or `sum(samples_collected) >= int(1e6)`
    assert budget.benchmark_end(cfg, 1_999_999, 999_999) is None
    assert "--benchmark=True ends a run" in budget.benchmark_end(cfg, 2_000_000, 0)
    assert budget.benchmark_end(cfg, 0, 1_000_000) is not None
    cfg.benchmark = False
    assert budget.benchmark_end(cfg, 10**9, 10**9) is None


def _cartpole(tmp_path, *flags):
    return parse_cfg(
        [
            "--env=CartPole-v1", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=4",
            "--rollout=16", "--batch_size=64", "--use_rnn=False", "--train_for_env_steps=2000",
            f"--train_dir={tmp_path}", "--experiment=e", "--decorrelate_experience_max_seconds=0", *flags,
        ]
    )  # fmt: skip


def test_benchmark_run_ends_at_its_sample_count_and_writes_its_folder(tmp_path, monkeypatch):
    """The budget (2000 frames) is not reached: the benchmark's sample count (cut to 300 agent
    steps here) ends the run, which is done and saved as any run (Sample Factory 1 writes `done`
    and its checkpoints in benchmark mode)."""
    monkeypatch.setattr(budget, "BENCHMARK_SAMPLES", 300)
    run = TrainingRun(_cartpole(tmp_path, "--benchmark=True"))
    assert run.run() == "done"
    assert 300 <= run.monitor.env_frames < 1000
    folder = tmp_path / "e"
    assert (folder / "done").is_file() and (folder / "cfg.json").is_file()
    assert list(folder.glob("checkpoint_p0/checkpoint_*.pth"))


def test_no_writes_run_writes_nothing(tmp_path):
    run = TrainingRun(_cartpole(tmp_path, "--no_writes=True", "--train_for_env_steps=512"))
    assert run.run() == "done" and run.monitor.env_frames >= 512
    assert not (tmp_path / "e").exists()


@pytest.mark.slow
def test_benchmark_skips_the_decorrelation_pause(tmp_path):
    """A pause of up to 10^5 s (uniform) would outlast the timeout with probability > 0.998."""
    start = time.monotonic()
    out = subprocess.run(
        [
            sys.executable, "-m", "surge.train", "--env=CartPole-v1", "--num_workers=1",
            "--num_envs_per_worker=4", "--rollout=16", "--batch_size=64", "--use_rnn=False",
            "--train_for_env_steps=2000", "--decorrelate_experience_max_seconds=100000",
            "--set_workers_cpu_affinity=False", "--benchmark=True",
            f"--train_dir={tmp_path}", "--experiment=d",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "d" / "done").is_file() and time.monotonic() - start < 240
