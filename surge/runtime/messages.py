"""The typed messages between the processes of the async placement. Each is a small named tuple
(immutable) of ints, strings and plain values: data itself stays in shared memory, messages carry
indices.

Hot path (per env step of a split): `PolicyRequest` to an inference worker, `ActionsReady` back.
Per rollout: `BlockReady` to each learner whose policy acted in the block, with its share. A
named tuple is pickled by class reference, 5-8x the cost of a plain tuple's round trip: the two
per-step ones travel as plain tuples of their fields in order, built and unpacked without their class (a few microseconds per env step of a split), and their queues pack
them with a `StructCodec` (`REQUEST_CODEC`, `REPLY_CODEC`: struct-packed int64s instead of
pickle, `surge.runtime.pipe_queue`), so a queue carries one message type at both ends. The classes
document the fields. `BlockReady`, once per rollout, is put and read as its class, packed by
`BLOCK_CODEC` (int64s: the first slot, the slots' count, the slots).
Reports to the main process: `ResetDone`, `Episodes`, `NonFiniteEnvOutput`, `EnvFaults`, `TrainStats`, `Saved`,
`SaveRefused`, `LearnerReady`, `ChildError`.
Commands from the main process to a learner: `SaveCommand`, `StopCommand`, and the population
commands (`surge.runtime.commands.SetHyperparams`; `ReplacePolicy` travels as `ExportPolicy` to
the source's learner, then `ImportPolicy` to the replaced one's). Their reports: `PolicyExported`,
`PolicyImported`.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from surge.runtime.pipe_queue import MAX_FRAME_BYTES


class PolicyRequest(NamedTuple):
    """A split's agents wait for actions at step `t` in their slots: `[first_slot, first_slot +
    num_slots)` when they are contiguous (always with one policy), else `num_slots` is the slots
    themselves, a tuple (`request_slots`). `tag` identifies the request: the worker's incarnation,
    the split's request sequence number and the split (see `surge.runtime.rollout_process`)."""

    worker_idx: int
    tag: int
    first_slot: int
    num_slots: int | tuple[int, ...]
    t: int


def wire_slots(index: slice | Any) -> tuple[int, int | tuple[int, ...]]:
    """`(first_slot, num_slots)` of a `PolicyRequest` for a split's slot index (`SplitState.index`:
    a slice, or `[N]` int64 slots that are not contiguous). With several policies a split may get
    scattered slots (`surge.data.block_pool.OwnerBlocks.get`), which a (first, count) pair would
    misname as the contiguous range from the first."""
    if isinstance(index, slice):
        return index.start, index.stop - index.start
    return int(index[0]), tuple(index.tolist())


def request_slots(first_slot: int, num_slots: int | tuple[int, ...]) -> slice | Any:
    """The slots a `PolicyRequest` names: a slice, or `[N]` int64 slots (`wire_slots`' inverse)."""
    if type(num_slots) is int:
        return slice(first_slot, first_slot + num_slots)
    import torch

    return torch.tensor(num_slots, dtype=torch.int64)


class ActionsReady(NamedTuple):
    """Policy `policy_id`'s inference worker wrote the actions of the request with this `tag`."""

    tag: int
    policy_id: int


class StructCodec:
    """Packs a queue's messages that are plain tuples of `fields` ints as little-endian int64s
    (`struct`), for `surge.runtime.pipe_queue.PipeQueue`; anything else on the queue (another
    message type, a `PolicyRequest` of scattered slots, whose `num_slots` is a tuple) is left to
    pickle. Decoding gives the same plain tuple back.

    Args:
        fields: the number of int fields of the message (`PolicyRequest`: 5, `ActionsReady`: 2).
    """

    def __init__(self, fields: int):
        self.fields = fields
        self._struct = struct.Struct(f"<{fields}q")

    def __reduce__(self) -> tuple[type[StructCodec], tuple[int]]:
        return StructCodec, (self.fields,)  # a `struct.Struct` does not pickle (queues go to children)

    def encode(self, msg: Any) -> bytes | None:
        """`msg`'s `fields` int64s, or None when it is not a tuple of that many ints."""
        if type(msg) is not tuple or len(msg) != self.fields:
            return None
        try:
            return self._struct.pack(*msg)
        except struct.error:  # a field that is not an int (scattered slots' tuple)
            return None

    def decode(self, frame: bytes) -> tuple[int, ...]:
        """The plain tuple of a frame's body `frame` (one kind byte, then `encode`'s bytes)."""
        return self._struct.unpack_from(frame, 1)


#: the inference workers' request queues: `PolicyRequest` (contiguous slots) as 5 int64s
REQUEST_CODEC = StructCodec(len(PolicyRequest._fields))
#: the rollout workers' inboxes: `ActionsReady` as 2 int64s (`SetRewardShaping` is pickled)
REPLY_CODEC = StructCodec(len(ActionsReady._fields))


class BlockReady(NamedTuple):
    """A finished block of trajectories starting at `first_slot`, held for the receiving learner
    until it trained on `slots`: the block's trajectories its policy acted in (None: all of them;
    `surge.data.routing`). On a learner's queue it is packed by `BLOCK_CODEC` (no pickle)."""

    first_slot: int
    slots: tuple[int, ...] | None = None


class BlockCodec:
    """Packs `BlockReady` for the learners' queues (`surge.runtime.pipe_queue.PipeQueue`) as
    little-endian int64s: `first_slot`, the number of `slots` (-1 for None), then the slots. One
    frame holds up to `max_slots` slots (a block's own slots fit many times over: a block is
    `--num_envs_per_worker` trajectories at most); a longer message, or anything that is not a
    `BlockReady`, is left to pickle. Decoding gives a `BlockReady` (both ends typed).

    Args:
        max_bytes: the most bytes `encode` gives (default: what one atomic frame carries besides
            its length and kind bytes, `surge.runtime.pipe_queue.MAX_FRAME_BYTES` - 5).
    """

    _HEAD = struct.Struct("<2q")

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES - 5):
        self.max_bytes = max_bytes
        #: the most slots a packed message holds (509 with Linux's 4096-byte PIPE_BUF)
        self.max_slots = (max_bytes - self._HEAD.size) // 8
        # one compiled `struct.Struct` per slot count met: a format string built per message
        # costs as much as the packing itself
        self._with_slots: dict[int, struct.Struct] = {}

    def __reduce__(self) -> tuple[type[BlockCodec], tuple[int]]:
        return BlockCodec, (self.max_bytes,)

    def _layout(self, n: int) -> struct.Struct:
        layout = self._with_slots.get(n)
        if layout is None:
            layout = self._with_slots[n] = struct.Struct(f"<{n + 2}q")
        return layout

    def encode(self, msg: Any) -> bytes | None:
        """`msg`'s int64s, or None when it is not a `BlockReady` of at most `max_slots` int slots."""
        if type(msg) is not BlockReady:
            return None
        first, slots = msg
        try:
            if slots is None:
                return self._HEAD.pack(first, -1)
            n = len(slots)
            if n > self.max_slots:
                return None
            return self._layout(n).pack(first, n, *slots)
        except struct.error:  # a field that is not an int
            return None

    def decode(self, frame: bytes) -> BlockReady:
        """The `BlockReady` of a frame's body `frame` (one kind byte, then `encode`'s bytes)."""
        first, n = self._HEAD.unpack_from(frame, 1)
        if n < 0:
            return BlockReady(first, None)
        return BlockReady(first, self._layout(n).unpack_from(frame, 1)[2:])


#: the learners' queues: `BlockReady` as int64s (`BlockCodec`)
BLOCK_CODEC = BlockCodec()


class ResetDone(NamedTuple):
    worker_idx: int
    incarnation: int


class Episodes(NamedTuple):
    """Finished episodes `[(return, length in env steps, policy_id, extra)]` of a rollout worker since its
    last report. Env steps are not reported: they are counted in shared memory
    (`SharedContext.env_steps`), so the main process sees them at once."""

    worker_idx: int
    episodes: list[tuple[float, int, int, dict[str, float] | None]]  # extra: `EpisodeStats.extra`


class NonFiniteEnvOutput(NamedTuple):
    """Agent steps of a rollout worker, since its last such report, whose reward (`rewards`) or
    observation (`observations`) held a NaN or ±inf: replaced by 0 and not trained on. Sent only
    when one of them is non-zero."""

    worker_idx: int
    rewards: int
    observations: int


class EnvFaults(NamedTuple):
    """env.step calls of a rollout worker that raised since its last such report (each env rebuilt,
    its episode ended), and the latest exception as one line. Sent only when `faults` > 0."""

    worker_idx: int
    faults: int
    last: str


class DataParallelStopped(NamedTuple):
    """A data-parallel run's learner: a rank stopped training (`surge.runtime.data_parallel`);
    this rank stops too."""

    policy_id: int


class TrainStats(NamedTuple):
    policy_id: int
    stats: dict[str, float]


class Saved(NamedTuple):
    """A learner wrote the checkpoint `path` of `kind` ("final": the regular checkpoint at the stop)."""

    policy_id: int
    kind: str
    path: str


class SaveRefused(NamedTuple):
    """A checkpoint of `kind` ("final": the one at the stop) was not written because the state held
    non-finite values: `reason` names the tensors; `env_frames` is the run's env frame count of
    the save. The previous checkpoint stays the latest."""

    policy_id: int
    kind: str
    reason: str
    env_frames: int


class LearnerReady(NamedTuple):
    policy_id: int
    policy_version: int


class ChildError(NamedTuple):
    """A child process crashed; `traceback` is its formatted traceback."""

    name: str
    traceback: str


class SaveCommand(NamedTuple):
    """Write a checkpoint of `kind` with the run's `counters` (kind "final": the last one, for which
    the learner skips batches it has not started)."""

    kind: str
    counters: dict[str, Any]


class StopCommand(NamedTuple):
    pass


class ExportPolicy(NamedTuple):
    """`ReplacePolicy`'s first half, to the source policy's learner: write its model and learner
    state (hyper-parameters included) to `path`, then report `PolicyExported`."""

    path: str


class PolicyExported(NamedTuple):
    policy_id: int
    path: str


class ImportPolicy(NamedTuple):
    """`ReplacePolicy`'s second half, to the replaced policy's learner: load the state at `path`
    (written by policy `source_policy_id`'s learner), keep its own policy_version increasing,
    publish the weights, report `PolicyImported`."""

    path: str
    source_policy_id: int


class PolicyImported(NamedTuple):
    policy_id: int
    source_policy_id: int
    policy_version: int
