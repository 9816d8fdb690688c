"""Writes an `ExportablePolicy` as an ONNX file.

torch.onnx.export with the TorchScript-based exporter (`dynamo=False`): the dynamo exporter
cannot trace the image normaliser's in-place float copy (`Tensor.data_ptr`, refused on fake
tensors in torch 2.13), and the traced graph matched the torch model within 1e-6 on the conv,
MLP and LSTM policies of tests/unit/test_export_onnx.py.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from torch import Tensor

from surge.export.policy import ExportablePolicy

#: ONNX opset of the written files (onnxruntime >= 1.18 runs it)
OPSET = 17


def write_onnx(policy: ExportablePolicy, example: list[Tensor], path: Path, metadata: dict[str, str]) -> Path:
    """Exports `policy` traced on `example` (its positional inputs, batch >= 2) to `path`, with a
    dynamic batch axis (dimension 0, named "batch") on every input and output and `metadata`
    (plus the inputs' and outputs' names) in the model's metadata_props. Returns `path`.

    Raises:
        ImportError: onnx is not installed (`pip install surge[export]`).
    """
    import onnx
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    names = [*policy.input_names, *policy.output_names]
    with warnings.catch_warnings():  # the tracer's and the deprecated exporter's warnings
        warnings.simplefilter("ignore")
        torch.onnx.export(
            policy,
            tuple(example),
            str(path),
            input_names=policy.input_names,
            output_names=policy.output_names,
            dynamic_axes={n: {0: "batch"} for n in names},
            opset_version=OPSET,
            dynamo=False,
        )
    model = onnx.load(str(path))
    meta = {
        **metadata,
        "inputs": json.dumps(policy.input_names),
        "outputs": json.dumps(policy.output_names),
    }
    for k, v in meta.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v
    onnx.save(model, str(path))
    return path
