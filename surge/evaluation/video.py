"""The video of `surge enjoy --save_video`: every episode from its first frame (after the reset)
to its last (the terminal one), and a file replaced only by a complete new one.

An episode of N env steps is N + 1 frames: the frame after the reset, then one after each step.
Envs auto-reset (`surge.envs.multi_agent`), so a render after an episode's last step shows the next
episode's start; the single-agent wrapper hands over the last frame in
`info[FINAL_FRAME_KEY]` instead. A multi-agent env gives none: there each step's frame is the render
after it, as before (its episodes' last frames are not in the video).

The mp4 is written to a temporary name in the same folder and renamed over `--video_name`, so a
reader, or a Ctrl+C during the encoding, never leaves half a file there; after a Ctrl+C only the
finished episodes are written, and with none finished the previous video is kept.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from surge.envs.multi_agent import FINAL_FRAME_KEY

log = logging.getLogger("surge")


class EpisodeVideo:
    """Collects the frames of the episodes `surge enjoy` plays (at most `max_frames`).

    Call `start()` after `env.reset`, `before_step()` before each `env.step`, and
    `after_step(infos, done)` after it (`done`: an agent's episode ended at that step).
    """

    def __init__(self, env: Any, max_frames: int):
        self.env = env
        self.max_frames = max_frames
        self.frames: list[np.ndarray] = []
        #: frames of the episodes finished so far (what a Ctrl+C leaves to write)
        self.finished_frames = 0
        self._need_first_frame = False

    def _add(self, frame: Any) -> None:
        if frame is not None and len(self.frames) < self.max_frames:
            self.frames.append(np.asarray(frame))

    def start(self) -> None:
        """The first episode's first frame (the env was just reset)."""
        self._add(self.env.render())

    def before_step(self) -> None:
        """The first frame of an episode that the last step's auto-reset began, now that it is
        played (an episode that is never played adds no frame)."""
        if self._need_first_frame:
            self._need_first_frame = False
            self._add(self.env.render())

    def after_step(self, infos: list[dict], done: bool) -> None:
        """The frame the step ended on: the episode's last one (`FINAL_FRAME_KEY`) when it ended."""
        final = infos[0].get(FINAL_FRAME_KEY) if done and len(infos) == 1 else None
        if final is not None:
            self._add(final)
            self._need_first_frame = True
        else:
            self._add(self.env.render())
        if done:
            self.finished_frames = len(self.frames)

    def write(self, path: Path, fps: int, interrupted: bool) -> Path | None:
        """Writes the frames to `path` (mp4, H.264, `fps` frames/s) through a temporary file in its
        folder; after a Ctrl+C (`interrupted`) only the finished episodes' frames. Returns the path
        written, or None when there was nothing to write (`path` is then left as it was, and the
        log says why).

        Raises:
            OSError: the folder cannot be written (the temporary file is removed).
        """
        frames = self.frames[: self.finished_frames] if interrupted else self.frames
        if not frames:
            kept = f"the previous {path} is kept" if path.exists() else f"{path} is not written"
            why = "no episode finished before Ctrl+C" if interrupted else "no frame was rendered"
            log.warning("No video: %s; %s.", why, kept)
            return None
        import imageio.v2 as imageio

        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix or '.mp4'}")
        try:
            writer: Any = imageio.get_writer(str(tmp), fps=fps, codec="libx264", macro_block_size=1)
            with writer:
                for f in frames:
                    writer.append_data(f)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        dropped = len(self.frames) - len(frames)
        log.info(
            "Wrote %d frames to %s%s",
            len(frames),
            path,
            f" (the {dropped} frames of the episode Ctrl+C cut short left out)" if dropped else "",
        )
        return path
