"""Mixed precision (`--mixed_precision`, issue 21): `torch.autocast` for the APPO learner's forward
pass and the inference workers' `act`, with `torch.amp.GradScaler` for fp16.

rl_games' `mixed_precision: True` (a2c_common.py, `torch.cuda.amp.autocast` + `GradScaler`) is fp16
on CUDA; surge adds bf16 (no scaler: bf16 has float32's exponent range). What stays float32: the
weights and the optimizer step, the values and logits the loss reads (cast back by `to_float32`),
the loss's reductions, V-trace / GAE and the value targets, and everything inference writes to
the buffers (actions, log-probs, values, logits, hidden states). docs/mixed_precision.md.

`auto` (the default) picks per process from what it runs on (`resolve_mixed_precision`): bf16 for
an APPO model with convolutions on a CPU with native bfloat16 instructions (avx512_bf16 or
amx_bf16), where it was measured faster end to end; float32 everywhere else (an MLP, where bf16
was no faster; a CPU that emulates bf16, where it was 10x slower; a GPU, not measured).
"""

from __future__ import annotations

import contextlib
import functools
import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from surge.cfg.config import Config
from surge.errors import ConfigError
from surge.learning.algorithm import algorithm_names, get_algorithm

MODES = ("auto", "none", "bf16", "fp16", "bf16_cuda")
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # x86 CPU flags with bfloat16 arithmetic


def _cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (Linux); empty where there is none."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@functools.cache
def native_bf16_cpu() -> bool:
    """Whether this CPU computes in bfloat16 natively (x86 `avx512_bf16` or `amx_bf16`), so that
    oneDNN's bf16 convolutions and matmuls are faster than float32's, not emulated. From torch's
    own check where it has one (`torch.cpu._is_avx512_bf16_supported`, `_is_amx_tile_supported`),
    else from /proc/cpuinfo's flags."""
    check = [getattr(torch.cpu, n, None) for n in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    if all(callable(c) for c in check):
        return any(bool(c()) for c in check)  # type: ignore[misc]
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    return bool(_cpu_flags() & set(NATIVE_BF16_FLAGS))


def has_convolutions(model: nn.Module) -> bool:
    """Whether `model` has a 2-D convolution layer (an image encoder)."""
    return any(isinstance(m, nn.Conv2d) for m in model.modules())


def resolve_mixed_precision(mode: str, algo: str, device: torch.device, model: nn.Module) -> tuple[str, str]:
    """The mode a process runs (`none`, `bf16` or `fp16`) for `--mixed_precision=mode`, and why.

    `bf16_cuda` becomes bf16 on a CUDA device and none elsewhere (rl_games 1.6.5's
    `mixed_precision: True`: `autocast('cuda', dtype=torch.bfloat16)`, which leaves CPU tensors in
    float32).

    `auto` becomes bf16 for an APPO model with convolutions on a CPU with native bfloat16
    (`native_bf16_cpu`), else none; other modes are returned as they are (they were checked by
    `check_mixed_precision` before the start). Every process of a run on one machine gets the same
    answer; a Ray sampler node on another machine may act in another precision than the learner
    trains in (its behavior log-probs come from its own forward pass, the target log-probs from
    the learner's, as with any policy lag)."""
    if mode == "bf16_cuda":  # rl_games' `mixed_precision: True`: its autocast('cuda') acts on CUDA only
        if device.type == "cuda":
            return "bf16", "--mixed_precision=bf16_cuda: bf16 on this CUDA device"
        return "none", f"--mixed_precision=bf16_cuda: float32 on {device.type} (bf16 only on a CUDA device)"
    if mode != "auto":
        return mode, f"--mixed_precision={mode}"
    if not get_algorithm(algo).capabilities.autocast:
        return "none", f"--mixed_precision=auto: float32, --algo={algo} does not run under autocast"
    if device.type != "cpu":
        return (
            "none",
            "--mixed_precision=auto: float32 on a GPU (auto picks bf16 only on a CPU, where it was measured)",
        )
    if not native_bf16_cpu():
        return (
            "none",
            "--mixed_precision=auto: float32, this CPU has no native bfloat16 (avx512_bf16, amx_bf16)",
        )
    if not has_convolutions(model):
        return (
            "none",
            "--mixed_precision=auto: float32, the model has no convolutions (bf16 is no faster there)",
        )
    return "bf16", "--mixed_precision=auto: bf16, a conv model on a CPU with native bfloat16"


def autocast_dtype(mode: str) -> torch.dtype | None:
    """The autocast dtype of `--mixed_precision=mode` (None for `none`)."""
    return _DTYPES.get(mode)


def autocast(mode: str, device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """A `torch.autocast` context on `device`'s type for `mode` (resolved: not `auto`), or a
    no-op one for `none`."""
    if mode == "auto":
        raise ValueError("resolve --mixed_precision=auto first (resolve_mixed_precision)")
    dtype = autocast_dtype(mode)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


@contextlib.contextmanager
def casts_kept(device: torch.device) -> Iterator[None]:
    """Within it, `torch.autocast` regions on this thread keep their casts of the weights from one
    region to the next, until `torch.clear_autocast_cache()` (call it whenever the weights change:
    the cache is keyed by the weight tensor, and an in-place update leaves its cast stale).

    `torch.autocast` casts each float32 leaf weight to the lower precision once per region and
    clears those casts when the outermost region ends: an inference worker under bf16 then casts
    every weight on every forward pass (the Nature CNN's 512 x 3136 layer: about 0.5 ms a pass on a
    CPU, 6.4 MB converted). This holds a disabled outer region open, so that the per-pass regions
    are inner ones and their exits keep the cache; ops between the regions run as without it.
    Whoever changes the weights in place in such a thread clears the cache: an inference worker
    when it loads new weights (`InferenceLoop.reload`), the APPO learner around each forward pass
    (`autocast_fresh`), the serial placement when a command or a frozen policy's new weights
    replace them (`SerialSampler.drop_casts`). The cache is cleared on the way out."""
    with torch.autocast(device_type=device.type, enabled=False):
        yield


@contextlib.contextmanager
def autocast_fresh(mode: str, device: torch.device) -> Iterator[None]:
    """`autocast(mode, device)` that neither uses nor leaves a kept cast of a weight
    (`casts_kept`): the cache is cleared on the way in and on the way out. For a forward pass whose
    weights change in place between passes (the learner's, between optimizer steps) in a thread
    where casts may be kept (the serial placement's). Backward needs no cast from the cache: the
    autograd graph holds the ones it saved."""
    region = autocast(mode, device)
    if isinstance(region, contextlib.nullcontext):
        yield
        return
    torch.clear_autocast_cache()
    try:
        with region:
            yield
    finally:
        torch.clear_autocast_cache()


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


def check_mixed_precision(cfg: Config) -> None:
    """Refuses `--mixed_precision` values the run cannot use.

    Raises:
        ConfigError(mixed_precision): an unknown value; fp16 on the CPU (autocast's fp16 on CPU
            has no fused kernels and the GradScaler brings nothing there: use bf16); a value on a
            device where autocast does not support the dtype (bf16 on a CUDA GPU without bf16,
            i.e. before Ampere); an algorithm not declaring `Capabilities.autocast` (its learner
            does not autocast).
    """
    mode = getattr(cfg, "mixed_precision", "none")
    if mode not in MODES:
        raise ConfigError("mixed_precision", f"unknown value {mode!r}.", f"pass one of {', '.join(MODES)}.")
    if mode in ("none", "auto"):  # auto resolves to float32 where bf16 does not apply
        return
    if mode == "bf16_cuda":
        if cfg.device == "cpu":  # float32 there, whatever the algorithm
            return
        mode = "bf16"  # on a GPU: bf16's checks
    if not get_algorithm(cfg.algo).capabilities.autocast:
        autocasting = [n for n in algorithm_names() if get_algorithm(n).capabilities.autocast]
        raise ConfigError(
            "mixed_precision",
            f"--algo={cfg.algo} does not run under autocast (only {', '.join(autocasting)}).",
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
