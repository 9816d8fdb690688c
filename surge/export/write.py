"""`export_model`: an acting module written as ONNX or TorchScript, whichever format is asked."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import torch
from torch import nn

from surge.errors import ConfigError
from surge.export.check import TRACE_BATCH
from surge.export.options import FORMATS
from surge.export.policy import ExportablePolicy


def export_model(
    model: nn.Module,
    obs_space: gym.Space,
    fmt: str,
    path: Path,
    metadata: dict[str, str] | None = None,
) -> ExportablePolicy:
    """Writes `model` (an actor-critic with `act`, see `ExportablePolicy`; put in eval mode here)
    for one agent's `obs_space` to `path` in `fmt` ("onnx" or "torchscript"), traced on random
    inputs of `TRACE_BATCH` agents. Returns the wrapper (what `surge.export.check.check_file`
    compares the file with).

    Raises:
        ConfigError: an unknown format (field "format").
        EnvError: an observation space that cannot be exported (a Box or a Dict of Boxes only).
    """
    if fmt not in FORMATS:
        raise ConfigError(
            "format", f"unknown format {fmt!r}.", f"pass --format={' or --format='.join(FORMATS)}."
        )
    model.eval()
    policy = ExportablePolicy(model, obs_space).eval()
    example = policy.example_inputs(TRACE_BATCH)
    meta = dict(metadata or {})
    with torch.no_grad():
        if fmt == "onnx":
            # onnx (optional, heavy): only when that format is written
            from surge.export.onnx_file import write_onnx

            write_onnx(policy, example, Path(path), meta)
        else:
            # only when that format is written (as onnx above)
            from surge.export.torchscript_file import write_torchscript

            write_torchscript(policy, example, Path(path), meta)
    return policy
