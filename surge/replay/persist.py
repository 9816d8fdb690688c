"""Saving a whole replay buffer to a file and loading it back (Stable-Baselines3's
`save_replay_buffer` / `load_replay_buffer`), for an exact resume of an off-policy run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

import torch


class Saveable(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def save_replay(replay: Saveable, path: str | os.PathLike[str]) -> None:
    """Writes `replay.state_dict()` to `path` with `torch.save` (written to `path + ".tmp"` and
    renamed, so a crash never leaves half a file under the name)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(replay.state_dict(), tmp)
    os.replace(tmp, path)


def load_replay(replay: Saveable, path: str | os.PathLike[str]) -> None:
    """Loads a file of `save_replay` into `replay`, which must have been built with the same
    arguments.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file holds another kind or shape of replay.
    """
    state = torch.load(Path(path), weights_only=False)
    replay.load_state_dict(state)
