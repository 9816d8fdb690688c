"""`--mixed_precision=auto` (the default, surge.learning.amp.resolve_mixed_precision): bf16 exactly
for an APPO conv model on a CPU with native bfloat16, float32 otherwise; the hardware check agrees
with the CPU's own flags; learner and inference of a run resolve alike, and the learner says which
in the log."""

import logging
import platform
from pathlib import Path

import pytest
import torch
from torch import nn

import surge.learning.amp as amp
from surge.app.resolve import parse_cfg
from surge.runtime.components import build_components

CPU = torch.device("cpu")
CONV = nn.Sequential(nn.Conv2d(4, 8, 3), nn.Flatten())
MLP = nn.Sequential(nn.Linear(4, 8), nn.Tanh())


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64", reason="/proc/cpuinfo x86 flags"
)
def test_native_bf16_matches_the_cpu_flags():
    """The reference is the kernel's list of CPU flags, not torch."""
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    assert amp.native_bf16_cpu() == bool(flags & {"avx512_bf16", "amx_bf16"})


@pytest.mark.parametrize("native", [True, False])
def test_auto_is_bf16_only_for_appo_conv_models_on_native_bf16_cpus(monkeypatch, native):
    monkeypatch.setattr(amp, "native_bf16_cpu", lambda: native)
    mode, why = amp.resolve_mixed_precision("auto", "APPO", CPU, CONV)
    assert mode == ("bf16" if native else "none") and "auto" in why
    assert amp.resolve_mixed_precision("auto", "APPO", CPU, MLP)[0] == "none"
    assert amp.resolve_mixed_precision("auto", "DQN", CPU, CONV)[0] == "none"
    assert amp.resolve_mixed_precision("auto", "APPO", torch.device("cuda"), CONV)[0] == "none"
    for explicit in ("none", "bf16", "fp16"):  # a mode the user chose is kept
        assert amp.resolve_mixed_precision(explicit, "APPO", CPU, MLP)[0] == explicit


def test_autocast_refuses_an_unresolved_auto():
    with pytest.raises(ValueError, match="resolve"):
        amp.autocast("auto", CPU)


def test_auto_is_accepted_for_every_algorithm(tmp_path):
    for algo in ("APPO", "A2C", "DQN"):
        extra = ["--train_for_env_steps=1000"] if algo == "DQN" else []
        cfg = parse_cfg(["--env=CartPole-v1", f"--algo={algo}", f"--train_dir={tmp_path}", *extra])
        assert cfg.mixed_precision == "auto"


@pytest.mark.parametrize("native", [True, False])
def test_a_conv_runs_learner_and_inference_resolve_alike(tmp_path, monkeypatch, caplog, native):
    monkeypatch.setattr(amp, "native_bf16_cpu", lambda: native)
    cfg = parse_cfg(
        ["--env=atari_pong", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=2",
         "--worker_num_splits=1", "--rollout=8", "--batch_size=16", f"--train_dir={tmp_path}"]
    )  # fmt: skip
    with caplog.at_level(logging.INFO, logger="surge"):
        c = build_components(cfg)
    try:
        learner, inference = c.learners[0], c.inference
        assert learner.mixed_precision == ("bf16" if native else "none")
        assert (inference._autocast is not None) == native
        assert sum("Learner: --mixed_precision=auto" in r.getMessage() for r in caplog.records) == 1
    finally:
        c.close()


def test_the_choice_is_logged_once_when_policy_0_is_frozen(tmp_path, caplog):
    cfg = parse_cfg(
        ["--env=CartPole-v1", "--serial_mode=True", "--num_policies=3", "--frozen_policies", "0:random",
         "--num_workers=1", "--num_envs_per_worker=2", "--worker_num_splits=1", "--rollout=8",
         "--batch_size=16", f"--train_dir={tmp_path}"]
    )  # fmt: skip
    with caplog.at_level(logging.INFO, logger="surge"):
        c = build_components(cfg)
    try:
        assert sum("Learner: --mixed_precision=auto" in r.getMessage() for r in caplog.records) == 1
    finally:
        c.close()
