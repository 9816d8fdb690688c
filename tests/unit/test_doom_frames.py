"""ChwNearestResize: channels-first frames resized as Sample Factory resizes channels-last ones
(`cv2.resize(frame_hwc, (w, h), INTER_NEAREST)`), without the transpose in between."""

from __future__ import annotations

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from surge.envs.doom.frames import ChwNearestResize  # noqa: E402

SIZES = [
    ((120, 160), (72, 128)),  # the default: 160x120 rendered, 128x72 observed
    ((144, 256), (72, 128)),  # wide_aspect_ratio
    ((120, 160), (84, 84)),
    ((120, 160), (48, 64)),
    ((120, 160), (75, 100)),
    ((120, 160), (200, 300)),  # upscaling
    ((144, 256), (90, 160)),
]


def reference(frame_chw: np.ndarray, h: int, w: int) -> np.ndarray:
    """The channels-last way: transpose, resize, transpose back."""
    hwc = np.ascontiguousarray(frame_chw.transpose(1, 2, 0))
    return cv2.resize(hwc, (w, h), interpolation=cv2.INTER_NEAREST).transpose(2, 0, 1)


@pytest.mark.parametrize("src, dst", SIZES)
@pytest.mark.parametrize("stacked", [True, False])
def test_resize_equals_the_channels_last_resize(src, dst, stacked):
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (3, *src), dtype=np.uint8)
    resize = ChwNearestResize(3, src, dst)
    if not stacked:
        resize.stacked = False  # the per-plane path, taken where the stacked one would mix planes
    out = resize(frame)
    assert out.shape == (3, *dst) and out.dtype == np.uint8 and out.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(out, reference(frame, *dst))


def test_the_stacked_check_refuses_a_row_mapping_that_mixes_planes(monkeypatch):
    """The check compares the stacked image's row choice with each plane's own: a resize that
    read the row above a plane's first one would take the previous plane's last row."""
    import surge.envs.doom.frames as frames

    real = frames._rows_chosen

    def off_by_one(resize, n_rows, src_h, dst_h, width):
        rows = real(resize, n_rows, src_h, dst_h, width)
        if n_rows > 1:
            rows[dst_h] -= 1  # plane 1's first output row from plane 0's last source row
        return rows

    monkeypatch.setattr(frames, "_rows_chosen", off_by_one)
    assert not ChwNearestResize(3, (120, 160), (72, 128)).stacked
    monkeypatch.setattr(frames, "_rows_chosen", real)
    assert ChwNearestResize(3, (120, 160), (72, 128)).stacked


def test_equal_sizes_return_the_frame_itself():
    frame = np.zeros((3, 120, 160), np.uint8)
    assert ChwNearestResize(3, (120, 160), (120, 160))(frame) is frame
