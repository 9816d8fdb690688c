"""Mixed precision (`--mixed_precision`, issue 21): `torch.autocast` for the APPO learner's forward
pass and the inference workers' `act`, with `torch.amp.GradScaler` for fp16.

rl_games' `mixed_precision: True` (a2c_common.py, `torch.cuda.amp.autocast` + `GradScaler`) is fp16
on CUDA; surge adds bf16 (no scaler: bf16 has float32's exponent range). What stays float32: the
weights and the optimizer step, the values and logits the loss reads (cast back by `to_float32`),
the loss's reductions, V-trace / GAE and the value targets, and everything inference writes to
the buffers (actions, log-probs, values, logits, hidden states). docs/mixed_precision.md.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import Tensor

from surge.errors import ConfigError

MODES = ("none", "bf16", "fp16")
ALGOS = ("APPO",)  # the learners that run their forward pass under autocast
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def autocast_dtype(mode: str) -> torch.dtype | None:
    """The autocast dtype of `--mixed_precision=mode` (None for `none`)."""
    return _DTYPES.get(mode)


def autocast(mode: str, device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """A `torch.autocast` context on `device`'s type for `mode`, or a no-op one for `none`."""
    dtype = autocast_dtype(mode)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def make_grad_scaler(mode: str, device: torch.device) -> torch.amp.GradScaler | None:
    """A `torch.amp.GradScaler` for fp16 (dynamic loss scaling: the loss is multiplied by the
    scale before `backward`, the gradients divided by it before clipping; a step with a
    non-finite gradient is skipped and the scale halved), None otherwise."""
    if mode != "fp16":
        return None
    return torch.amp.GradScaler(device.type)


def to_float32(x: Any) -> Any:
    """`x` (a tensor, or a dict / tuple / list of them) with every floating tensor cast to float32
    (a no-op for float32 tensors); integer tensors (discrete actions) are kept."""
    if isinstance(x, Tensor):
        return x.float() if x.is_floating_point() and x.dtype != torch.float32 else x
    if isinstance(x, dict):
        return {k: to_float32(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(to_float32(v) for v in x)
    return x


def check_mixed_precision(cfg: Any) -> None:
    """Refuses `--mixed_precision` values the run cannot use.

    Raises:
        ConfigError(mixed_precision): an unknown value; fp16 on the CPU (autocast's fp16 on CPU
            has no fused kernels and the GradScaler brings nothing there: use bf16); a value on a
            device where autocast does not support the dtype (bf16 on a CUDA GPU without bf16,
            i.e. before Ampere); an algorithm other than APPO (their learners do not autocast).
    """
    mode = getattr(cfg, "mixed_precision", "none")
    if mode not in MODES:
        raise ConfigError("mixed_precision", f"unknown value {mode!r}.", f"pass one of {', '.join(MODES)}.")
    if mode == "none":
        return
    if cfg.algo not in ALGOS:
        raise ConfigError(
            "mixed_precision",
            f"--algo={cfg.algo} does not run under autocast (only {', '.join(ALGOS)}).",
            "pass --mixed_precision=none.",
        )
    if cfg.device == "cpu":
        if mode == "fp16":
            raise ConfigError(
                "mixed_precision",
                "fp16 is not supported on the CPU (slower than float32 there, and a GradScaler "
                "brings nothing; docs/mixed_precision.md).",
                "pass --mixed_precision=bf16 (or none), or --device=gpu.",
            )
        return
    if mode == "bf16" and torch.cuda.is_available() and not torch.cuda.is_bf16_supported():
        raise ConfigError(
            "mixed_precision",
            "this GPU has no bfloat16 support (autocast needs compute capability >= 8.0).",
            "pass --mixed_precision=fp16 (or none).",
        )
