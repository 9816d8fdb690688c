"""An inference worker's forward pass on a GPU, replayed from captured CUDA graphs (`--cuda_graphs`).

Why: on a GPU an inference pass of a small model is bound by the host, not the GPU. Each of its
torch operations costs the CPU a dispatch and a kernel launch, whatever the rows: about 60
operations at some 25 µs each per pass on the H200 machine (docs/benchmarks.md), where the GPU was
busy for a fraction of that. A captured graph launches the whole forward pass, sampling included,
with one call (`torch.cuda.CUDAGraph`, in the pattern of PyTorch's "CUDA Graphs" notes: static
inputs, a warm-up on a side stream, capture, replay).

How a pass runs (`GraphedAct.__call__`):

- The request's rows are padded up to a bucket: powers of two from `MIN_BUCKET` rows to the most
  rows a pass can have, one graph per bucket, captured when the bucket is first used. The padding
  rows hold what an earlier pass left there; each row's outputs depend on its own inputs only (the
  forward pass has no batch statistics), so they are computed and never read.
- Each input field (the observations' leaves, the hidden states) is gathered on the host into
  page-locked staging and crosses to the bucket's static input, a view of one device buffer sized
  for the largest bucket, in one transfer.
- In the graph, every field `act` returns is packed into one uint8 `[rows, width]` tensor, the
  fields' bytes side by side, widest dtype first so each field stays aligned for its dtype. It
  crosses to the host in one transfer and is unpacked there into views (`OutputLayout`).
- The graph reads the weights at fixed addresses. The async placement loads new weights in place
  (`surge.runtime.shared_state.SharedWeights.load_into`), and the model's normalisers keep their
  derived statistics in the same tensors (`RunningMeanStd.derive_in_place`); after new weights
  (`weights_changed`, which `InferenceWorker.weights_changed` calls) the derived statistics are
  brought up to date before the next replay (`refresh`).
- A capture that fails (an operation that cannot be captured: a host synchronisation, a shape that
  depends on the data) logs a warning once, and the worker acts eagerly from then on.

On the CPU there is no graph: the same static buffers, buckets and packing run eagerly (`capture`
False), which is how the tests check the data path without a GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from surge.cfg.config import Config
from surge.data.device_copy import clear_cuda_error
from surge.data.trajectory import tree_leaves, tree_map
from surge.learning.algorithm import ActContext, Algorithm
from surge.models.normalization import RunningMeanStd

log = logging.getLogger("surge")

#: the smallest bucket, in rows: below it a pass costs the same and graphs would only multiply
MIN_BUCKET = 8


def bucket_rows(n: int, max_rows: int) -> int:
    """The rows of the graph that serves a pass of `n` rows: the smallest power of two >= n (at
    least `MIN_BUCKET`), at most `max_rows`.

    Raises:
        ValueError: `n` is not in `[1, max_rows]`.
    """
    if not 1 <= n <= max_rows:
        raise ValueError(f"a pass of {n} rows: a graph serves 1 to {max_rows} rows")
    b = MIN_BUCKET
    while b < n:
        b *= 2
    return min(b, max_rows)


@dataclass(frozen=True)
class PackedField:
    """One output field's place in a packed row: bytes `[offset, offset + nbytes)`, read as
    `dtype` and shaped `shape` (per row)."""

    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    offset: int
    nbytes: int


class OutputLayout:
    """How the outputs of `act` (a dict of `[B, ...]` tensors) lie side by side in one uint8
    `[B, width]` tensor: the fields in order of decreasing item size (then by name), so that each
    starts at a multiple of its item size, and `width` rounded up to 8 bytes, so that every row
    does too.

    Args:
        outputs: one pass's outputs, from which the fields' dtypes and per-row shapes are taken.
    """

    def __init__(self, outputs: dict[str, Tensor]):
        order = sorted(outputs, key=lambda k: (-outputs[k].element_size(), k))
        fields, offset = [], 0
        for name in order:
            v = outputs[name]
            shape = tuple(v.shape[1:])
            nbytes = v[0].numel() * v.element_size() if len(v) else 0
            fields.append(PackedField(name, v.dtype, shape, offset, nbytes))
            offset += nbytes
        self.fields = fields
        self.width = -(-offset // 8) * 8
        self.names = tuple(outputs)  # the fields in the order `act` returned them

    def pack(self, outputs: dict[str, Tensor]) -> Tensor:
        """The outputs `{name: [B, ...]}` as one uint8 `[B, width]` tensor (on their device)."""
        first = outputs[self.fields[0].name]
        b = len(first)
        parts = [outputs[f.name].reshape(b, -1).contiguous().view(torch.uint8) for f in self.fields]
        pad = self.width - sum(f.nbytes for f in self.fields)
        if pad:
            parts.append(torch.zeros((b, pad), dtype=torch.uint8, device=first.device))
        return torch.cat(parts, dim=1)

    def unpack(self, packed: Tensor) -> dict[str, Tensor]:
        """Views `{name: [n, ...]}` of the rows of `packed` (uint8 `[n, width]`, contiguous rows)."""
        n = len(packed)
        return {
            f.name: packed[:, f.offset : f.offset + f.nbytes].view(f.dtype).view(n, *f.shape)
            for f in self.fields
        }


def cuda_graphs_choice(
    cfg: Config, algo: Algorithm, device: torch.device, mixed_precision: str, own_model: bool
) -> tuple[bool, str]:
    """Whether an inference worker replays `act` from CUDA graphs (`--cuda_graphs`), and why.

    Args:
        cfg: the run's config.
        algo: the run's `surge.learning.algorithm.Algorithm`.
        device: the inference worker's device.
        mixed_precision: `--mixed_precision` as resolved for it (none, bf16, fp16).
        own_model: the worker's model is its own (an inference process); False where it shares
            the learner's (the serial placement), whose training would move the weights.
    """
    if not cfg.cuda_graphs:
        return False, "--cuda_graphs=False"
    if device.type != "cuda":
        return False, f"the model is on {device.type}, graphs are CUDA's"
    if not own_model:
        return False, "inference shares the learner's model in this placement"
    if not algo.capabilities.graphed_act or not algo.act_reads_obs:
        return False, f"--algo={algo.name}'s act is not declared graph-safe (Capabilities.graphed_act)"
    if mixed_precision != "none":
        return False, f"--mixed_precision={mixed_precision}: graphs are captured in float32 only"
    if cfg.deterministic:
        return False, "--deterministic=True acts eagerly (its seeded streams of action samples)"
    return True, "on: act replayed from one captured graph per batch size (rows padded to a power of two)"


def _recover(device: torch.device) -> None:
    """After a failed capture: waits for the device and consumes the error the capture left as the
    CUDA runtime's last error (`clear_cuda_error`)."""
    try:
        torch.cuda.synchronize(device)
    except RuntimeError:  # the capture's error, raised here: consumed by the launch below
        pass
    clear_cuda_error(device)


def _rebuild(tree: Any, leaves: list[Tensor]) -> Any:
    it = iter(leaves)
    return tree_map(lambda _: next(it), tree)


class GraphedAct:
    """Acting for an inference worker with static buffers and, on a GPU, captured CUDA graphs
    (module docstring).

    Args:
        model: the acting module; eval mode, its weights updated in place only.
        act: the algorithm's act function (`surge.learning.algorithm.ActFn`); it must read nothing
            of its `ActContext` but `deterministic` (the algorithm's `Capabilities.graphed_act`).
        obs: the trajectory buffers' observations inference reads, a tree of `[S, T+1, ...]` host
            tensors, or None when `act` reads none.
        rnn_states: the buffers' hidden states `[S, T+1, state]` float32 (state may be 0).
        max_rows: the most rows a pass can have (the acting agents).
        device: where the model is.
        capture: capture CUDA graphs (a CUDA device); False runs the same data path eagerly.
        ctx: the context every pass acts with.
    """

    def __init__(
        self,
        model: nn.Module,
        act: Callable[..., dict[str, Tensor]],
        obs: Any,
        rnn_states: Tensor,
        max_rows: int,
        device: torch.device,
        capture: bool,
        ctx: ActContext | None = None,
    ):
        if capture and device.type != "cuda":
            raise ValueError(f"CUDA graphs are captured on a CUDA device, not {device}")
        self.model, self.act, self.device, self.capture = model, act, device, capture
        self.max_rows, self.ctx = max_rows, ctx or ActContext()
        self._obs_tree = obs
        self._steps = rnn_states.shape[1]  # T+1: a slot's rows in the flat view
        sources = ([] if obs is None else tree_leaves(obs)) + [rnn_states]
        pin = device.type == "cuda"
        #: per input field: (host rows `[S * (T+1), ...]`, page-locked staging, static device buffer)
        self._inputs = [
            (
                src.flatten(0, 1),
                torch.empty((max_rows, *src.shape[2:]), dtype=src.dtype, pin_memory=pin),
                torch.zeros((max_rows, *src.shape[2:]), dtype=src.dtype, device=device),
            )
            for src in sources
        ]
        self._normalizers = [m for m in model.modules() if isinstance(m, RunningMeanStd)]
        for m in self._normalizers:
            m.derive_in_place = True
        self.layout: OutputLayout | None = None
        self._host: Tensor | None = None  # page-locked uint8 [max_rows, width]: the packed outputs
        #: per bucket: a callable that runs the pass (a graph's replay, or the eager pass) and
        #: returns the packed outputs `[bucket, width]` on the device
        self._runners: dict[int, Callable[[], Tensor]] = {}
        self._pool = torch.cuda.graph_pool_handle() if capture else None
        self.captured: list[int] = []  # the buckets served by a captured graph
        self.failure: str | None = None  # why capturing stopped, once it failed
        self._stale = True  # the derived statistics are refreshed before the next pass

    def refresh(self) -> None:
        """Brings the normalisers' derived statistics up to date in place after new weights."""
        for m in self._normalizers:
            m.derived()
        self._stale = False

    def weights_changed(self) -> None:
        """The model's weights (its normalisers' statistics among them) changed in place: the
        derived statistics are refreshed before the next pass. Once, rather than checked before
        every pass: the check (`RunningMeanStd.derived`'s version key, per normaliser) is host work
        on every pass's path, and the statistics change only with new weights."""
        self._stale = True

    def _forward(self, rows: int) -> Tensor:
        """One pass over the first `rows` rows of the static inputs; the packed outputs."""
        statics = [static[:rows] for _, _, static in self._inputs]
        obs = None if self._obs_tree is None else _rebuild(self._obs_tree, statics[:-1])
        out = self.act(self.model, obs, statics[-1], self.ctx)
        if self.layout is None:
            self.layout = OutputLayout(out)
            pin = self.device.type == "cuda"
            self._host = torch.empty((self.max_rows, self.layout.width), dtype=torch.uint8, pin_memory=pin)
        return self.layout.pack(out)

    def _make_runner(self, rows: int) -> Callable[[], Tensor]:
        if self.capture and self.failure is None:
            try:
                return self._capture(rows)
            except Exception as e:  # an operation capture does not allow: act eagerly from now on
                self.failure = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                _recover(self.device)
                log.warning(
                    "inference: capturing a CUDA graph of act failed (%s); acting without graphs "
                    "(--cuda_graphs=False says so from the start)",
                    self.failure,
                )
        return lambda: self._forward(rows)

    def _capture(self, rows: int) -> Callable[[], Tensor]:
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # warm-up: cuDNN's algorithm search and lazy set-up, uncaptured
            for _ in range(2):
                self._forward(rows)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: CUDA work another thread of the process may issue does not void the capture
        with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
            packed = self._forward(rows)
        self.captured.append(rows)

        def replay() -> Tensor:
            graph.replay()
            return packed

        return replay

    def __call__(self, slots: Tensor, ts: Tensor | int) -> dict[str, Tensor]:
        """Acts on the buffers' rows `(slots, ts)` (`slots` `[n]` int64, `ts` `[n]` int64 or one
        step for all); returns the outputs of `act` as host views `{name: [n, ...]}`, valid until
        the next call.

        Raises:
            ValueError: n is 0 or above `max_rows`.
        """
        return self.act_rows(slots * self._steps + ts)

    def act_rows(self, rows: Tensor) -> dict[str, Tensor]:
        """`__call__` for the buffers' flat rows `slot * (T+1) + t` (`rows` `[n]` int64)."""
        n = len(rows)
        bucket = bucket_rows(n, self.max_rows)
        for src, stage, static in self._inputs:
            torch.index_select(src, 0, rows, out=stage[:n])
            static[:n].copy_(stage[:n], non_blocking=True)
        if self._stale:
            self.refresh()
        runner = self._runners.get(bucket)
        if runner is None:
            runner = self._runners[bucket] = self._make_runner(bucket)
        packed = runner()
        assert self.layout is not None and self._host is not None  # set by the first pass
        host = self._host[:n]
        host.copy_(packed[:n], non_blocking=True)
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
        return self.layout.unpack(host)
