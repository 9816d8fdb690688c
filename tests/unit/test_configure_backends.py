"""`configure_backends`: a CUDA process lets cuDNN time its convolution algorithms, as Sample
Factory's learner and inference workers do (`torch.backends.cudnn.benchmark`), except under
`--deterministic`; a CPU process changes nothing. Setting the flag needs no GPU."""

from __future__ import annotations

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.runtime.components import configure_backends


@pytest.fixture
def restore_benchmark():
    before = torch.backends.cudnn.benchmark
    yield
    torch.backends.cudnn.benchmark = before


@pytest.mark.parametrize(("flags", "expected"), [([], True), (["--deterministic=True", "--seed=1"], False)])
def test_a_cuda_process_times_its_convolutions_unless_deterministic(restore_benchmark, flags, expected):
    cfg = parse_cfg(["--env=CartPole-v1", *flags])
    torch.backends.cudnn.benchmark = not expected
    configure_backends(cfg, torch.device("cuda"))
    assert torch.backends.cudnn.benchmark is expected


def test_a_cpu_process_leaves_cudnn_alone(restore_benchmark):
    torch.backends.cudnn.benchmark = False
    configure_backends(parse_cfg(["--env=CartPole-v1"]), torch.device("cpu"))
    assert torch.backends.cudnn.benchmark is False
