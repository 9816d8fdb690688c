"""The choices and defaults of `surge export`'s flags (no torch import: bad input is refused fast)."""

from __future__ import annotations

#: --format -> the default file suffix
FORMATS = {"onnx": ".onnx", "torchscript": ".pt"}
#: the default --tolerance of --check: max |file - torch| over every output
DEFAULT_TOLERANCE = 1e-5
