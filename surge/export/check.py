"""`surge export --check`: the written file run on random observations against the torch model.

The file runs in onnxruntime (ONNX, CPU provider) or `torch.jit.load` (TorchScript) on inputs
from `ExportablePolicy.example_inputs` (observations sampled from the env's observation space,
random recurrent states), with a batch size other than the one it was traced with, so that the
dynamic batch axis is exercised too.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from surge.export.options import DEFAULT_TOLERANCE
from surge.export.policy import ExportablePolicy

__all__ = ["DEFAULT_TOLERANCE", "check_file", "max_differences", "run_file"]

#: batch of the check's inputs (the file is traced with another, `TRACE_BATCH`)
CHECK_BATCH = 7
TRACE_BATCH = 2


def run_file(path: Path, fmt: str, names: list[str], inputs: list[Tensor]) -> list[np.ndarray]:
    """The outputs of the exported file at `path` (`fmt` "onnx" or "torchscript") on `inputs`
    (in the order of `names`, the file's input names), as numpy arrays in output order."""
    if fmt == "onnx":
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        return list(session.run(None, {n: x.numpy() for n, x in zip(names, inputs, strict=True)}))
    module = torch.jit.load(str(path), map_location="cpu")
    with torch.no_grad():
        return [t.numpy() for t in module(*inputs)]


def max_differences(reference: list[Tensor], got: list[np.ndarray], names: list[str]) -> dict[str, float]:
    """Per output name, max |got - reference| (float64; inf for a shape mismatch or a non-finite
    difference, so that it fails any tolerance)."""
    out = {}
    for name, ref, g in zip(names, reference, got, strict=True):
        r = ref.detach().cpu().numpy().astype(np.float64)
        a = np.asarray(g).astype(np.float64)
        if r.shape != a.shape:
            out[name] = math.inf
            continue
        d = float(np.abs(a - r).max()) if r.size else 0.0
        out[name] = d if math.isfinite(d) else math.inf
    return out


def check_file(policy: ExportablePolicy, path: Path, fmt: str, seed: int = 1) -> dict[str, float]:
    """Runs the file written from `policy` and the torch model on the same random inputs of
    `CHECK_BATCH` agents; returns `max_differences` per output name."""
    inputs = policy.example_inputs(CHECK_BATCH, seed=seed)
    with torch.no_grad():
        reference = list(policy(*inputs))
    got = run_file(path, fmt, policy.input_names, inputs)
    return max_differences(reference, got, policy.output_names)
