"""torchrun's environment read as a rank, the budget split, per-rank seeds, the device each rank
uses, and the settings a data-parallel run refuses (`surge.runtime.ranks`)."""

from __future__ import annotations

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.errors import ConfigError
from surge.runtime.components import torch_device
from surge.runtime.ranks import (
    RankInfo,
    check_data_parallel,
    local_env_step_budget,
    rank_info,
    rank_seed,
)


def _cfg(tmp_path, *extra):
    return parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", "--experiment=e", *extra])


def test_rank_info_reads_torchrun_env():
    assert rank_info({}) == RankInfo(0, 1, 0) and not rank_info({}).distributed
    info = rank_info({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
    assert (info.rank, info.world_size, info.local_rank, info.distributed, info.is_main) == (
        3,
        4,
        1,
        True,
        False,
    )
    with pytest.raises(ConfigError, match="WORLD_SIZE"):
        rank_info({"RANK": "4", "WORLD_SIZE": "4"})
    with pytest.raises(ConfigError, match="WORLD_SIZE"):
        rank_info({"WORLD_SIZE": "two"})


def test_budget_split_and_seeds():
    assert local_env_step_budget(10_000, 1) == 10_000
    assert local_env_step_budget(10_000, 3) == 3334  # rounded up: the ranks sample at least the budget
    assert rank_seed(7, 2) == 9 and rank_seed(None, 2) is None


@pytest.mark.parametrize(
    ("flag", "field"),
    [
        ("--num_policies=2", "num_policies"),
        ("--with_pbt=True", "with_pbt"),
        ("--algo=DQN --train_for_env_steps=100000", "algo"),
        ("--algo=DUMMY_SAMPLER", "algo"),
        ("--train_for_env_steps=1", "train_for_env_steps"),
    ],
)
def test_unsupported_settings_refused_with_several_ranks(tmp_path, flag, field):
    cfg = _cfg(tmp_path)
    check_data_parallel(cfg, RankInfo(0, 2, 0))  # the defaults run
    # parse_cfg itself checks with this process's env (one rank): nothing refused there
    bad = _cfg(tmp_path, *flag.split(), *(["--num_policies=2"] if "pbt" in flag else []))
    with pytest.raises(ConfigError) as e:
        check_data_parallel(bad, RankInfo(1, 2, 1))
    assert e.value.field == field and "data-parallel" in str(e.value)
    check_data_parallel(bad, RankInfo(0, 1, 0))  # one rank: nothing refused


def test_parse_cfg_refuses_under_torchrun_env(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ConfigError, match="num_policies"):
        _cfg(tmp_path, "--num_policies=2")


def test_device_per_rank(tmp_path, monkeypatch):
    cfg = _cfg(tmp_path)
    assert torch_device(cfg) == torch.device("cpu")
    # the validated spelling; the GPU ones need a GPU to pass validation, so they are set after it
    cfg.device = "cuda:1"
    assert torch_device(cfg) == torch.device("cuda", 1)
    cfg.device = "gpu"
    assert torch_device(cfg) == torch.device("cuda")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert torch_device(cfg) == torch.device("cuda", 1)  # the rank's local GPU
    cfg.device = "cuda:0"
    assert torch_device(cfg) == torch.device("cuda", 0)  # named: every rank uses it


def test_device_spelling_refused(tmp_path):
    with pytest.raises(ConfigError, match="device"):
        _cfg(tmp_path, "--device=tpu")
    if not torch.cuda.is_available():
        for d in ("gpu", "cuda", "cuda:0"):
            with pytest.raises(ConfigError, match="no CUDA device"):
                _cfg(tmp_path, f"--device={d}")


def test_flags_of_other_features_refused_once_they_exist(tmp_path):
    """Flags other helpers add (set here on a parsed config, as they would parse): central value,
    mixed precision."""
    for name, value in [
        ("central_value", True),
        ("mixed_precision", "fp16"),
    ]:
        cfg = _cfg(tmp_path)
        setattr(cfg, name, value)
        with pytest.raises(ConfigError) as e:
            check_data_parallel(cfg, RankInfo(0, 2, 0))
        assert e.value.field == name
    cfg = _cfg(tmp_path, "--algo=A2C")
    cfg.mixed_precision = "none"
    check_data_parallel(cfg, RankInfo(0, 2, 0))  # A2C and the off values run
