"""An algorithm's capabilities come from its declaration (`Algorithm.capabilities`), never from its
name: two toy algorithms, APPO's declaration under new names with every capability on and with
none, are accepted and refused by the same checks that accept APPO / A2C / DUMMY_SAMPLER today."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from surge.algorithms.appo.declaration import APPO
from surge.errors import ConfigError
from surge.export.load import saved_values
from surge.learning import algorithm as registry
from surge.learning.algorithm import Capabilities, get_algorithm, register_algorithm
from surge.learning.amp import check_mixed_precision, resolve_mixed_precision
from surge.learning.central_value import check_central_value_flags
from surge.runner.outcome import is_benchmark
from surge.runtime.ranks import RankInfo, check_data_parallel

ALL = Capabilities(**{f.name: True for f in dataclasses.fields(Capabilities)})
ON, OFF = "TOY_CAPABLE", "TOY_INCAPABLE"


@pytest.fixture(autouse=True)
def toys():
    register_algorithm(dataclasses.replace(APPO, name=ON, capabilities=ALL))
    register_algorithm(dataclasses.replace(APPO, name=OFF, capabilities=Capabilities()))
    yield
    for name in (ON, OFF):
        registry._ALGORITHMS.pop(name, None)


def test_a_user_algorithm_declares_no_capability_by_default():
    assert Capabilities() == Capabilities(**{f.name: False for f in dataclasses.fields(Capabilities)})
    assert get_algorithm("APPO").capabilities.autocast and not get_algorithm("DQN").capabilities.autocast


def test_mixed_precision_follows_the_autocast_capability():
    on = SimpleNamespace(algo=ON, mixed_precision="bf16", device="cpu")
    check_mixed_precision(on)  # accepted
    with pytest.raises(ConfigError) as e:
        check_mixed_precision(SimpleNamespace(algo=OFF, mixed_precision="bf16", device="cpu"))
    assert e.value.field == "mixed_precision" and "APPO" in str(e.value) and ON in str(e.value)
    conv = nn.Conv2d(1, 1, 1)
    mode, why = resolve_mixed_precision("auto", OFF, torch.device("cpu"), conv)
    assert mode == "none" and "does not run under autocast" in why
    assert (
        "does not run under autocast" not in resolve_mixed_precision("auto", ON, torch.device("cpu"), conv)[1]
    )


def _ddp_cfg(algo: str) -> SimpleNamespace:
    return SimpleNamespace(
        algo=algo,
        with_pbt=False,
        self_play=False,
        num_policies=1,
        frozen_policies="",
        sampler_only=False,
        central_value=False,
        mixed_precision="none",
        train_for_env_steps=10_000,
    )


def test_data_parallel_follows_the_capability():
    check_data_parallel(_ddp_cfg(ON), RankInfo(0, 2, 0))  # accepted
    with pytest.raises(ConfigError) as e:
        check_data_parallel(_ddp_cfg(OFF), RankInfo(0, 2, 0))
    assert e.value.field == "algo" and ON in str(e.value) and "A2C" in str(e.value)


def test_central_value_follows_the_capability():
    def cfg(algo: str) -> SimpleNamespace:
        return SimpleNamespace(
            algo=algo,
            central_value=True,
            central_value_use_rnn=False,
            central_value_learning_rate=None,
            central_value_mini_epochs=None,
            central_value_minibatch_size=None,
            central_value_max_grad_norm=None,
            central_value_state_key="state",
        )

    check_central_value_flags(cfg(ON))
    with pytest.raises(ConfigError) as e:
        check_central_value_flags(cfg(OFF))
    assert e.value.field == "central_value"


def test_sampler_only_makes_a_benchmark_and_export_follows_exportable(tmp_path):
    assert is_benchmark(["python", "-m", "surge.train", "--env=CartPole-v1", f"--algo={ON}"])
    assert not is_benchmark(["python", "-m", "surge.train", "--env=CartPole-v1", f"--algo={OFF}"])
    for name in (ON, OFF):
        (tmp_path / name).mkdir()
        (tmp_path / name / "cfg.json").write_text(json.dumps({"algo": name, "env": "CartPole-v1"}))
    assert saved_values(str(tmp_path), ON)["algo"] == ON
    with pytest.raises(ConfigError, match="APPO, A2C"):
        saved_values(str(tmp_path), OFF)
