"""The hot messages' codec (`surge.runtime.messages.StructCodec`): a `PolicyRequest` and an
`ActionsReady` cross a `PipeQueue` as struct-packed int64s and come out as the same plain tuples;
what the codec does not pack (scattered slots, another message type on the queue) is pickled and
arrives unchanged, in order with the packed ones."""

import pickle

from surge.runtime.commands import SetRewardShaping
from surge.runtime.messages import (
    BLOCK_CODEC,
    REPLY_CODEC,
    REQUEST_CODEC,
    ActionsReady,
    BlockReady,
    PolicyRequest,
)
from surge.runtime.pipe_queue import MAX_FRAME_BYTES, PipeQueue


def test_requests_and_replies_are_packed_as_int64s_and_read_back_as_the_same_tuples():
    request = tuple(PolicyRequest(3, 2**40 + 7, 128, 16, 31))
    assert REQUEST_CODEC.encode(request) is not None and len(REQUEST_CODEC.encode(request)) == 5 * 8
    assert REQUEST_CODEC.decode(b"S" + REQUEST_CODEC.encode(request)) == request
    reply = tuple(ActionsReady(2**40 + 7, 1))
    assert len(REPLY_CODEC.encode(reply)) == 2 * 8
    # not packed: scattered slots (a tuple field), another type, a tuple of another length
    assert REQUEST_CODEC.encode((3, 5, 128, (128, 130, 131), 31)) is None
    assert REPLY_CODEC.encode(SetRewardShaping(0, {"a": 1.0})) is None
    assert REPLY_CODEC.encode((1, 2, 3)) is None


def test_a_queue_with_a_codec_delivers_packed_and_pickled_messages_in_order():
    queue = PipeQueue(codec=REPLY_CODEC)
    shaping = SetRewardShaping(1, {"a": 0.5})
    sent = [(7, 0), shaping, (8, 1), (9, 0)]
    for msg in sent:
        queue.put(msg)
    got = queue.get_many(timeout=1.0)
    assert got == sent and type(got[0]) is tuple and type(got[1]) is SetRewardShaping
    requests = PipeQueue(codec=REQUEST_CODEC)
    scattered = (3, 5, 128, (128, 130, 131), 31)
    requests.put((3, 4, 0, 16, 2))
    requests.put(scattered)
    assert requests.get_many(timeout=1.0) == [(3, 4, 0, 16, 2), scattered]


def test_the_codec_travels_to_a_child_process():
    assert pickle.loads(pickle.dumps(REQUEST_CODEC)).encode((1, 2, 3, 4, 5)) == REQUEST_CODEC.encode(
        (1, 2, 3, 4, 5)
    )


def test_block_ready_is_packed_as_int64s_and_read_back_as_a_block_ready():
    # the bytes a naive packing gives: first slot, the count (-1 for None), the slots, int64 LE
    def reference(first: int, slots: tuple[int, ...] | None) -> bytes:
        values = [first, -1] if slots is None else [first, len(slots), *slots]
        return b"".join(v.to_bytes(8, "little", signed=True) for v in values)

    for msg in (BlockReady(64, None), BlockReady(2**40, (2**40, 2**40 + 3, 7)), BlockReady(0, ())):
        coded = BLOCK_CODEC.encode(msg)
        assert coded == reference(*msg)
        back = BLOCK_CODEC.decode(b"S" + coded)
        assert type(back) is BlockReady and back == msg
    # not packed: a plain tuple, another type, more slots than one atomic frame holds
    assert BLOCK_CODEC.encode((64, None)) is None
    assert BLOCK_CODEC.encode(SetRewardShaping(0, {"a": 1.0})) is None
    assert BLOCK_CODEC.encode(BlockReady(0, tuple(range(BLOCK_CODEC.max_slots + 1)))) is None
    biggest = BLOCK_CODEC.encode(BlockReady(0, tuple(range(BLOCK_CODEC.max_slots))))
    assert biggest is not None and 4 + 1 + len(biggest) <= MAX_FRAME_BYTES  # one atomic write


def test_a_learner_queue_delivers_block_ready_typed_in_order_packed_or_pickled():
    queue = PipeQueue(codec=pickle.loads(pickle.dumps(BLOCK_CODEC)))  # as a child gets it
    many = tuple(range(10_000, 10_000 + 2 * BLOCK_CODEC.max_slots, 2))  # pickled, in parts
    sent = [BlockReady(8, None), BlockReady(0, (0, 2, 5)), BlockReady(9_999, many), BlockReady(16, ())]
    for msg in sent:
        queue.put(msg)
    got = queue.get_many(timeout=1.0)
    assert got == sent and all(type(m) is BlockReady for m in got)
    assert got[1].slots == (0, 2, 5) and got[0].slots is None
