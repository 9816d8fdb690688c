"""Replay buffers for off-policy algorithms (issue 20): a time-major ring per env-agent column
(`ring`), uniform and prioritized n-step replay (`uniform`, `prioritized`, `n_step`, the sum tree
in `sum_tree`), R2D2's sequence replay (`sequence`), frame-based storage of stacked-frame
observations (`frames`) and saving a buffer to a file (`persist`). Independent of the engine: a
learner appends the blocks of `LearnerBase.prepare_batch` and samples from here."""

from surge.replay.frames import FrameObs
from surge.replay.persist import load_replay, save_replay
from surge.replay.prioritized import PrioritizedReplay
from surge.replay.ring import RingStore
from surge.replay.sequence import SequenceReplay, mixed_priority
from surge.replay.sum_tree import SumTree
from surge.replay.uniform import UniformReplay

__all__ = [
    "FrameObs",
    "PrioritizedReplay",
    "RingStore",
    "SequenceReplay",
    "SumTree",
    "UniformReplay",
    "load_replay",
    "mixed_priority",
    "save_replay",
]
