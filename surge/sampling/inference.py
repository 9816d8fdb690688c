"""The inference worker: one batched forward pass for many `(slots, t)` requests, reading
observations and hidden states from the trajectory buffers and writing what the algorithm's `act`
returns back. Placement-agnostic like the rollout worker."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from surge.data.trajectory import TrajectoryBuffers, gather_rows, tree_map
from surge.envs.action_masks import MASK_KEY
from surge.learning.algorithm import ActContext
from surge.learning.amp import autocast, to_float32
from surge.learning.central_value import actor_obs
from surge.sampling.graphed_act import GraphedAct, OutputLayout

#: numpy views of the buffers (`_numpy_views`): the non-Dict fields by name, the observations
#: inference reads (a tree of arrays), `rnn_states`
_NumpyViews = tuple[dict[str, np.ndarray], Any, np.ndarray]


class InferenceWorker:
    """Acts for batches of agents of one policy.

    Args:
        model: the policy's acting module (`surge.learning.algorithm.ModelParts.acting`; its
            weights are the current policy).
        buffers: the trajectory buffers requests index into.
        device: where the forward pass runs.
        act: the algorithm's act function (`surge.learning.algorithm.ActFn`): model, obs `[B, ...]`
            (None when `reads_obs` is False), rnn_states `[B, state]` -> {field: `[B, ...]`} with
            "actions" and "rnn_states" among them.
        policy_id: the policy this worker acts for.
        num_policies: policies of the run; with more than one, a request's slots are filtered to
            those whose `policy_id` at t is this worker's.
        reads_obs: whether `act` needs observations (when False and the env has action masks,
            `act` gets the dict `{"action_mask": [B, num_logits] bool}` alone).
        num_actors: acting agents of the run (`ActContext.num_actors`).
        actor_offset: added to the buffers' actor ids in `ActContext.actor_ids`: a Ray sampler
            node's actors are numbered after the previous nodes' (0 elsewhere).
        skip_obs_key: an observation Dict entry never read (the central value's state,
            `--central_value_state_key`: the actor does not see it); the rest goes to `act`, the bare
            `obs` entry when only it is left (`surge.learning.central_value.actor_obs`).
        mixed_precision: `--mixed_precision` as resolved (none, bf16 or fp16; not auto, see
            `surge.learning.amp.resolve_mixed_precision`): `act` runs under `torch.autocast` and
            every floating tensor it returns is cast to float32 before it is written.
        cuda_graphs: act through `surge.sampling.graphed_act.GraphedAct`: on a CUDA device replayed
            from captured graphs, elsewhere the same static data path run eagerly (the tests');
            the caller decides (`cuda_graphs_choice`: the model must be this worker's own).

    `act` gets an `ActContext` per forward pass: the acting agents' `actor_ids` read from the
    buffers' per-slot table (a view for contiguous slots; the rollout workers write it once per
    rollout, never per step), `num_actors`, and `env_frames`, which the placement sets as it
    counts frames.
    """

    def __init__(
        self,
        model: nn.Module,
        buffers: TrajectoryBuffers,
        device: torch.device,
        act: Callable[..., dict[str, Tensor]],
        policy_id: int = 0,
        num_policies: int = 1,
        reads_obs: bool = True,
        num_actors: int = 0,
        skip_obs_key: str | None = None,
        mixed_precision: str = "none",
        actor_offset: int = 0,
        cuda_graphs: bool = False,
    ):
        self.model, self.buffers, self.device = model, buffers, device
        self.actor_offset = actor_offset
        #: `--mixed_precision` other than none: a fresh autocast context per forward pass
        self._autocast = (
            None if mixed_precision == "none" else functools.partial(autocast, mixed_precision, device)
        )
        self.num_actors = num_actors
        self.env_frames = 0  # the run's env frames as last told (`ActContext.env_frames`)
        self.act, self.reads_obs = act, reads_obs
        self.policy_id, self.num_policies = policy_id, num_policies
        self.policy_version = 0
        self.samples = 0
        # the buffers' tensors by field name (what `act` returns is written there)
        self._fields = {name: getattr(buffers, name) for name in buffers.FIELDS}
        self._on_cpu = device.type == "cpu"
        self._no_state: dict[int, Tensor] = {}  # [n, 0] hidden states of models without an RNN
        self._masked = isinstance(buffers.obs, dict) and MASK_KEY in buffers.obs
        #: the buffers' observations inference reads (views; the skipped state entry left out)
        self._obs = buffers.obs if skip_obs_key is None else actor_obs(buffers.obs, skip_obs_key)
        #: numpy views of the same memory (host memory, whatever the model's device): contiguous
        #: requests' writes index these, a third of the cost of indexing the tensors (a few µs per
        #: op, several ops per request); on the CPU their reads too (`_np`)
        self._views = _numpy_views(self._fields, self._obs, buffers)
        self._np = self._views if self._on_cpu else None
        self._steps = buffers.rnn_states.shape[1]  # T+1: a slot's rows in the buffers' flat views
        #: per contiguous request's slots `(start, stop)`: their first rows in the flat views
        self._slot_rows: dict[tuple[int, int], np.ndarray] = {}
        #: off the CPU, the outputs of an eager pass cross to the host packed into one tensor
        self._pack_outputs = not self._on_cpu
        self._layout: OutputLayout | None = None
        #: `act` replayed from CUDA graphs (`cuda_graphs`): the rows of a pass gathered into static
        #: buffers, the outputs back in one transfer
        self._graphed = (
            GraphedAct(
                model,
                act,
                self._obs,
                buffers.rnn_states,
                min(len(buffers.rnn_states), num_actors or len(buffers.rnn_states)),
                device,
                capture=device.type == "cuda",
            )
            if cuda_graphs
            else None
        )

    @property
    def autocasts(self) -> bool:
        """Whether `act` runs under autocast (`--mixed_precision` bf16 or fp16 here)."""
        return self._autocast is not None

    def weights_changed(self) -> None:
        """Call it after the model's weights changed in place: drops autocast's casts of the old
        weights (`surge.learning.amp.casts_kept`; none without mixed precision) and has the graphed
        path refresh its normalisers' derived statistics (`GraphedAct.weights_changed`)."""
        if self._autocast is not None:
            torch.clear_autocast_cache()
        if self._graphed is not None:
            self._graphed.weights_changed()

    def infer(self, requests: Sequence[tuple[Tensor | slice, int]]) -> None:
        """Acts on every request `(slots, t)` in one forward pass (without autograd); `slots` is
        `[N]` int64 or, for contiguous slots, a `slice` (cheaper: the buffers are read and written
        through views instead of gathered copies).

        Writes every field `act` returns at `(slots, t)` (the new hidden state at `(slots, t + 1)`)
        and `policy_version` at `(slots, t)`. With several policies, only the slots whose
        `policy_id[slot, t]` is this worker's policy are acted on.
        """
        if torch.is_grad_enabled():  # (the async inference process turns autograd off for good)
            with torch.no_grad():
                return self._infer(requests)
        return self._infer(requests)

    def _infer(self, requests: Sequence[tuple[Tensor | slice, int]]) -> None:
        buf, dev = self.buffers, self.device
        # contiguous slots at one t each (what rollout workers request), one policy: written back
        # request by request through the numpy views (on the CPU read through them too)
        views = self._views if self.num_policies == 1 and _all_views(requests) else None
        if views is not None and self._np is not None and self._graphed is None:
            # _all_views found every request (slice, int), which mypy cannot narrow a Sequence to
            return self._infer_views(requests, self._np)  # type: ignore[arg-type]
        if views is not None and self._graphed is not None:
            rows = self._rows(requests)  # type: ignore[arg-type]
            if len(rows) <= self._graphed.max_rows:  # (more rows than actors: eager, below)
                self._write_requests(self._graphed.act_rows(rows), requests, views)  # type: ignore[arg-type]
                self.samples += len(rows)
                return
        slots: Tensor | slice
        ts: Tensor | int
        if len(requests) == 1:
            slots, ts = requests[0]
        else:
            slots = torch.cat([_as_index(s) for s, _ in requests])
            ts = torch.cat([torch.full((_count(s),), t, dtype=torch.int64) for s, t in requests])
        if self.num_policies > 1:
            slots = _as_index(slots)
            mine = buf.policy_id[slots, ts] == self.policy_id
            slots = slots[mine]
            if isinstance(ts, Tensor):
                ts = ts[mine]
            if not len(slots):
                return
        n = _count(slots)
        if self._graphed is not None and n <= self._graphed.max_rows:  # (more rows than actors: eager)
            out = self._graphed(_as_index(slots), ts)  # host views: written below as they are
            self._write(out, slots, ts)
            self.samples += n
            return
        if isinstance(slots, slice) and self._on_cpu:
            # a view of the buffers: the model gets a copy of its own (a custom model may write
            # into its input), as a gather would give it
            def read(x: Tensor) -> Tensor:
                return x[slots, ts].clone()
        else:
            index, pin = _as_index(slots), not self._on_cpu

            def read(x: Tensor) -> Tensor:
                # rows of the [S * (T+1), ...] view: `torch.index_select`, one memcpy per row
                # (`x[slots, ts]` copies element by element, about 16x slower on image observations);
                # for a GPU into page-locked memory, so that the copy to the device is asynchronous
                rows = gather_rows(x.flatten(0, 1), index * x.shape[1] + ts, pin)
                return rows.to(dev, non_blocking=True)

        if self.reads_obs:
            obs = tree_map(read, self._obs)
        elif self._masked:  # a policy that reads no observation still keeps to the legal actions
            obs = {MASK_KEY: read(buf.obs[MASK_KEY])}
        else:
            obs = None
        rnn_states: Tensor | None
        if buf.rnn_states.shape[-1]:
            rnn_states = read(buf.rnn_states)
        else:  # no recurrent state: spare the gather
            rnn_states = self._no_state.get(n)
            if rnn_states is None:
                rnn_states = self._no_state[n] = torch.empty((n, 0), device=dev)
        ids = self.buffers.actor_ids[slots]
        if self.actor_offset:  # a Ray sampler node: the run-wide ids
            ids = ids + self.actor_offset
        ctx = ActContext(ids, self.num_actors, self.env_frames)
        if self._autocast is None:
            out = self.act(self.model, obs, rnn_states, ctx)
        else:  # --mixed_precision: act under autocast, its outputs written as float32
            with self._autocast():
                out = to_float32(self.act(self.model, obs, rnn_states, ctx))
        if self._pack_outputs:  # one transfer to the host for all outputs, not a `.cpu()` (a sync) each
            layout = self._layout
            if layout is None or layout.names != tuple(out):
                layout = self._layout = OutputLayout(out)
            out = layout.unpack(layout.pack(out).cpu())
        if views is not None:
            self._write_requests(out, requests, views)  # type: ignore[arg-type]
        else:
            self._write(out, slots, ts)
        self.samples += n

    def _rows(self, requests: Sequence[tuple[slice, int]]) -> Tensor:
        """The rows `slot * (T+1) + t` of contiguous requests in the buffers' flat views, in
        request order: `[N]` int64."""
        parts = []
        for slots, t in requests:
            first = self._slot_rows.get((slots.start, slots.stop))
            if first is None:
                first = np.arange(slots.start, slots.stop, dtype=np.int64) * self._steps
                self._slot_rows[(slots.start, slots.stop)] = first
            parts.append(first + t)
        return torch.from_numpy(parts[0] if len(parts) == 1 else np.concatenate(parts))

    def _write_requests(
        self, out: dict[str, Tensor], requests: Sequence[tuple[slice, int]], views: _NumpyViews
    ) -> None:
        """Writes `act`'s outputs `{field: [N, ...]}` (host tensors, the requests' rows in order)
        request by request through the numpy `views`: each field at `(slots, t)`, the hidden state
        at `(slots, t + 1)`, and the policy_version."""
        fields, _, rnn_np = views
        states = out["rnn_states"]
        values = {name: value.cpu().numpy() for name, value in out.items() if name != "rnn_states"}
        lo = 0
        for slots, t in requests:
            hi = lo + (slots.stop - slots.start)
            for name, value in values.items():
                fields[name][slots, t] = value[lo:hi]
            self._write_rnn_states(slots, t, states[lo:hi], rnn_np)
            fields["policy_version"][slots, t] = self.policy_version
            lo = hi

    def _write(self, out: dict[str, Tensor], slots: Tensor | slice, ts: Tensor | int) -> None:
        """Writes `act`'s outputs `{field: [N, ...]}` at `(slots, ts)` (the hidden state at
        `ts + 1`) and the policy_version."""
        fields = self._fields
        for name, value in out.items():
            if name == "rnn_states":
                self._write_rnn_states(slots, ts, value)
            else:
                fields[name][slots, ts] = value.cpu()  # (a CPU tensor's `.cpu()` is itself)
        self.buffers.policy_version[slots, ts] = self.policy_version

    def _infer_views(self, requests: Sequence[tuple[slice, int]], views: _NumpyViews) -> None:
        """`_infer` for requests of contiguous slots at one t each, on the CPU, through the buffers'
        numpy views `views` (`self._np`, passed in as known to be there): the same reads (copies
        the model owns; several requests' rows concatenated into one batch) and writes (each
        request's rows of the outputs at its own place)."""
        fields, obs_np, rnn_np = views
        if len(requests) == 1:
            ((slots, t),) = requests

            def read(x: np.ndarray) -> Tensor:
                return torch.from_numpy(x[slots, t].copy())

            ids = self.buffers.actor_ids[slots]
        else:

            def read(x: np.ndarray) -> Tensor:
                return torch.from_numpy(np.concatenate([x[s, t] for s, t in requests]))

            ids = torch.cat([self.buffers.actor_ids[s] for s, _ in requests])
        n = len(ids)
        if self.reads_obs:
            # a tree of numpy views: tree_map's leaves are typed as the tensors of its other callers
            obs = tree_map(read, obs_np)  # type: ignore[arg-type]
        elif self._masked:
            obs = {MASK_KEY: read(obs_np[MASK_KEY])}
        else:
            obs = None
        rnn_states: Tensor | None
        if rnn_np.shape[-1]:
            rnn_states = read(rnn_np)
        else:
            rnn_states = self._no_state.get(n)
            if rnn_states is None:
                rnn_states = self._no_state[n] = torch.empty((n, 0))
        if self.actor_offset:
            ids = ids + self.actor_offset
        ctx = ActContext(ids, self.num_actors, self.env_frames)
        if self._autocast is None:
            out = self.act(self.model, obs, rnn_states, ctx)
        else:
            with self._autocast():
                out = to_float32(self.act(self.model, obs, rnn_states, ctx))
        self._write_requests(out, requests, views)
        self.samples += n

    def _write_rnn_states(
        self, slots: Tensor | slice, ts: Tensor | int, value: Tensor, rnn_np: np.ndarray | None = None
    ) -> None:
        """Writes the next hidden states `value` `[N, state]` at `(slots, ts + 1)`, through the
        buffers' numpy view `rnn_np` when given (a contiguous request); nothing when `act` returns
        no state (`[N, 0]`: a model without an RNN, DUMMY_SAMPLER whatever the buffers' width).
        One place for every path."""
        if not value.shape[-1]:
            return
        if rnn_np is not None:
            rnn_np[slots, ts + 1] = value.cpu().numpy()
        else:
            self.buffers.rnn_states[slots, ts + 1] = value if self._on_cpu else value.cpu()


def _numpy_views(fields: dict[str, Tensor], obs: Any, buffers: TrajectoryBuffers) -> _NumpyViews | None:
    """(numpy views of the buffers' non-Dict fields by name, of the observations inference reads
    (a tree like `obs`), of `rnn_states`), or None when a tensor has no numpy dtype (bfloat16)."""
    try:
        views = {name: t.numpy() for name, t in fields.items() if isinstance(t, Tensor)}
        return views, tree_map(lambda t: t.numpy(), obs), buffers.rnn_states.numpy()
    except (TypeError, RuntimeError):
        return None


def _all_views(requests: Sequence[tuple[Tensor | slice, int]]) -> bool:
    """Whether every request is contiguous slots (a slice) at one t (an int)."""
    return all(type(slots) is slice and type(t) is int for slots, t in requests)


def _as_index(slots: Tensor | slice) -> Tensor:
    """`slots` as `[N]` int64."""
    return torch.arange(slots.start, slots.stop, dtype=torch.int64) if isinstance(slots, slice) else slots


def _count(slots: Tensor | slice) -> int:
    return slots.stop - slots.start if isinstance(slots, slice) else len(slots)
