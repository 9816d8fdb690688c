"""Sample Factory's meanings the seed lines rely on (issue 58): its dummy sampler has no splits, so
`--algo=DUMMY_SAMPLER --num_envs_per_worker=1` runs (the refusal stays for a learning algorithm and
for splits that were asked for)."""

from __future__ import annotations

from pathlib import Path

import pytest

from surge.app.resolve import parse_cfg
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
