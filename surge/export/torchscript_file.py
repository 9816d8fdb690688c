"""Writes an `ExportablePolicy` as a TorchScript file (torch.jit.trace; `torch.jit.load` runs it
without surge)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch
from torch import Tensor

from surge.export.policy import ExportablePolicy

#: the name of the JSON metadata inside the file (`torch.jit.load(path, _extra_files={...})`)
METADATA_FILE = "surge_export.json"


def write_torchscript(
    policy: ExportablePolicy, example: list[Tensor], path: Path, metadata: dict[str, str]
) -> Path:
    """Traces `policy` on `example` (its positional inputs, batch >= 2: the batch axis stays
    dynamic) and saves it to `path` with `metadata` and the input/output names as the extra file
    `METADATA_FILE`. The traced module takes the inputs positionally, in `policy.input_names`'
    order, and returns a tuple in `policy.output_names`' order. Returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # the tracer's warnings (shape arithmetic recorded as ops)
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(policy, tuple(example), check_trace=False)
    meta = {**metadata, "inputs": policy.input_names, "outputs": policy.output_names}
    torch.jit.save(traced, str(path), _extra_files={METADATA_FILE: json.dumps(meta)})
    return path
