"""Nearest-neighbour resizing of channels-first frames, without a transpose.

ViZDoom renders channels first (`ScreenFormat.CRCGCB`: `uint8 [3, H, W]`), the layout the model
reads. Resizing channels last and transposing after (cv2 works on `[H, W, C]` images) costs a
strided copy of every pixel, about half of the frame's cost in a rollout worker. Instead the `C`
planes are resized as one `[C * H, W]` image in one cv2 call: with nearest-neighbour
interpolation every output row comes from one source row, and row `c * h + y` of the stacked
output comes from plane `c`'s row for `y`, as long as cv2's row mapping keeps the planes apart.
That is checked once per size pair, on an image of row indices; where it fails (a rounding at a
plane's first row) each plane is resized on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np


def _rows_chosen(resize: Callable, n_rows: int, src_h: int, dst_h: int, width: int) -> np.ndarray:
    """The source row `resize` (cv2's nearest-neighbour resize) reads for each output row of an
    `[n_rows * src_h, width]` image made `[n_rows * dst_h, width]`: `int64 [n_rows * dst_h]`."""
    index = np.repeat(np.arange(n_rows * src_h, dtype=np.uint16)[:, None], width, axis=1)
    out = resize(index, (width, n_rows * dst_h))
    return out[:, 0].astype(np.int64)


class ChwNearestResize:
    """Resizes `uint8 [C, H, W]` frames to `uint8 [C, h, w]` as
    `cv2.resize(frame_hwc, (w, h), interpolation=cv2.INTER_NEAREST)` of the same frame channels
    last would (Sample Factory's resize), transposed.

    Args:
        channels: C.
        src_hw: (H, W) of the frames given.
        dst_hw: (h, w) of the frames returned.
    """

    def __init__(self, channels: int, src_hw: tuple[int, int], dst_hw: tuple[int, int]):
        self.c, (self.src_h, self.src_w), (self.h, self.w) = int(channels), src_hw, dst_hw
        # cv2 is imported here, not with this module (which the fork server imports with the env
        # families): with cv2 imported at the top, a run's rollout and inference workers kept the
        # title `python` instead of `surge:rollout_0` ... (setproctitle), which the tests and `ps`
        # rely on; why is not known (a fork server that only preloads cv2 is fine)
        import cv2

        self._resize = partial(cv2.resize, interpolation=cv2.INTER_NEAREST)
        self.identity = (self.src_h, self.src_w) == (self.h, self.w)
        per_plane = _rows_chosen(self._resize, 1, self.src_h, self.h, 1)
        expected = np.concatenate([k * self.src_h + per_plane for k in range(self.c)])
        #: one cv2 call over the stacked planes gives the per-plane result (checked, see the module)
        self.stacked = bool(
            np.array_equal(_rows_chosen(self._resize, self.c, self.src_h, self.h, 1), expected)
        )

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        """`frame` (`uint8 [C, H, W]`, C-contiguous) resized: a new array, or `frame` itself when
        the sizes are equal."""
        if self.identity:
            return frame
        if self.stacked:
            tall = frame.reshape(self.c * self.src_h, self.src_w)
            out = self._resize(tall, (self.w, self.c * self.h))
            return out.reshape(self.c, self.h, self.w)
        out = np.empty((self.c, self.h, self.w), np.uint8)
        for k in range(self.c):
            self._resize(frame[k], (self.w, self.h), dst=out[k])
        return out
