"""`surge export`: a trained policy-gradient policy as one file that maps observations to actions.

- `policy`: `ExportablePolicy`, the wrapper whose positional tensors are the file's named inputs
  and outputs (observation normalisation, recurrent state and action masks included);
- `onnx_file`, `torchscript_file`: write it as ONNX (torch.onnx.export, the TorchScript-based
  exporter) or TorchScript (torch.jit.trace);
- `check`: runs the written file (onnxruntime / torch.jit.load) on random observations and
  compares it with the torch model;
- `load`: the experiment's config, spaces and checkpointed acting module;
- `command`: the `surge export` command line (`options`: its choices and defaults).

Nothing is imported here: `surge export --help` and refused input do not wait for torch.
See docs/export.md.
"""
