"""The scalars of an experiment's TensorBoard event files, per policy, as numpy series.

An experiment folder holds `summaries/<policy_id>/events.out.tfevents.*`, one event file per start
of the run (a resumed run appends a new file). `EventReader` reads them with tensorboard's
`EventAccumulator`, keeping one accumulator per file so that a second `read()` parses only the
events written since the first (cheap enough to call at every checkpoint).

The x axes of a series: `env_frames` (the summary's step; docs/metrics.md) and `seconds`, the
training wall-clock time: from the first event of each file to its last, the time between a stop
and its resume left out.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np

EVENT_GLOB = "events.out.tfevents.*"


@dataclasses.dataclass
class Series:
    """One scalar tag of one policy, sorted by env frame.

    Attributes:
        env_frames: int64 [N], the summary's step (env steps × frameskip).
        seconds: float64 [N], training seconds at the summary (see the module doc).
        values: float64 [N].
    """

    env_frames: np.ndarray
    seconds: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.values)

    def last(self) -> float:
        """The latest value (nan when empty)."""
        return float(self.values[-1]) if len(self.values) else float("nan")

    def x(self, axis: str) -> np.ndarray:
        """The x values: `axis` is "env_frames" or "seconds"."""
        return self.env_frames if axis == "env_frames" else self.seconds


#: policy id -> tag -> series
RunScalars = dict[int, dict[str, Series]]


def _file_order(path: Path) -> list[Any]:
    """Event files sort by their name's numbers (`events.out.tfevents.<time>.<host>.<pid>.<n>`): the
    creation time first, then the writer's counter as a number (10 after 9)."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path.name)]


def policy_dirs(folder: Path) -> dict[int, Path]:
    """policy id -> its summaries folder (`folder/summaries/<id>`), for the ids that exist."""
    root = Path(folder) / "summaries"
    if not root.is_dir():
        return {}
    return {int(p.name): p for p in root.iterdir() if p.is_dir() and p.name.isdigit()}


class EventReader:
    """Reads the scalars of one experiment folder (`folder/summaries/<policy>/`), incrementally:
    each `read()` returns every scalar written so far, parsing only what was added since the last."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self._acc: dict[Path, Any] = {}

    def read(self) -> RunScalars:
        """Every scalar tag of every policy (`RunScalars`); empty when the folder has no summaries.
        A later event file (a resumed run) supersedes the points of earlier ones at or after its first
        env frame (a run resumed from a checkpoint older than its last summaries repeats those frames)."""
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        out: RunScalars = {}
        for pid, d in sorted(policy_dirs(self.folder).items()):
            per_file = []
            for f in sorted(d.glob(EVENT_GLOB), key=_file_order):
                acc = self._acc.get(f)
                if acc is None:
                    acc = self._acc[f] = EventAccumulator(str(f), size_guidance={"scalars": 0})
                acc.Reload()
                per_file.append(acc)
            out[pid] = _merge(per_file)
        return out


def _merge(accs: list[Any]) -> dict[str, Series]:
    """Joins the files of one policy (oldest first) into one series per tag."""
    # each file's first step: the points of older files from there on are superseded
    tags_per_file = [acc.Tags().get("scalars", []) for acc in accs]
    events_per_file = [
        {tag: acc.Scalars(tag) for tag in tags} for acc, tags in zip(accs, tags_per_file, strict=True)
    ]
    starts, ends, first_walls = [], [], []
    for events in events_per_file:
        steps = [e.step for evs in events.values() for e in evs]
        walls = [e.wall_time for evs in events.values() for e in evs]
        starts.append(min(steps) if steps else None)
        ends.append(max(walls) if walls else None)
        # the file's clock starts at its first summary (the first env steps' report), not at the
        # writer's creation: start-up (env creation, a resume's loading) is not training time,
        # as in the run's log (`TrainingRun._summarise`)
        first_walls.append(min(walls) if walls else 0.0)
    # training seconds: each file's time since its first summary, after the files before it
    offsets, total = [], 0.0
    for first, end in zip(first_walls, ends, strict=True):
        offsets.append(total)
        if end is not None:
            total += max(0.0, end - first)
    columns: dict[str, list[tuple[int, float, float]]] = {}
    for k, events in enumerate(events_per_file):
        later = [s for s in starts[k + 1 :] if s is not None]
        cut = min(later) if later else None
        for tag, evs in events.items():
            col = columns.setdefault(tag, [])
            for e in evs:
                if cut is None or e.step < cut:
                    col.append((int(e.step), offsets[k] + e.wall_time - first_walls[k], float(e.value)))
    out = {}
    for tag, col in columns.items():
        col.sort(key=lambda p: (p[0], p[1]))
        arr = np.asarray(col, dtype=np.float64).reshape(-1, 3)
        out[tag] = Series(arr[:, 0].astype(np.int64), arr[:, 1], arr[:, 2])
    return out


def read_scalars(folder: Path | str) -> RunScalars:
    """Every scalar of the experiment folder, read once (`EventReader(folder).read()`)."""
    return EventReader(folder).read()
