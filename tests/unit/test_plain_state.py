"""`surge.sampling.plain_state` beyond envs: values whose type subclasses a plain one (an IntEnum is
an int) are written so that the file still loads with `torch.load(weights_only=True)`."""

import enum
import io

import torch

from surge.sampling.plain_state import decode, encode


class Mode(enum.IntEnum):
    A = 1
    B = 2


class Holder:
    def __init__(self):
        self.mode = Mode.A
        self.tags = {1, 2}


def test_an_int_enum_attribute_round_trips_through_a_weights_only_load():
    saved = Holder()
    saved.mode, saved.tags = Mode.B, {3}
    buf = io.BytesIO()
    torch.save(encode(saved), buf)
    buf.seek(0)
    fresh = decode(torch.load(buf, weights_only=True), Holder())
    assert fresh.mode is Mode.B and fresh.tags == {3}
