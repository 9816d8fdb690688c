"""Saving a whole replay buffer to a file and loading it back (Stable-Baselines3's
`save_replay_buffer` / `load_replay_buffer`), for an exact resume of an off-policy run.

The file holds tensors and plain values only and is read with `torch.load(weights_only=True)`:
loading it runs no code that the file names (a replay file of a shared or downloaded experiment
folder is data). Files of earlier surge versions also hold one numpy float array (the sum tree of
prioritized replays); those numpy types alone are admitted as well."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch


class Saveable(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class ReplayFileRefused(ValueError):
    """A replay file is not loaded (the message names it and says why)."""


# a numeric numpy array, as numpy pickles it (`ndarray.__reduce__`): the sum tree in files of
# earlier versions; arrays of Python objects stay refused (their dtype is not admitted)
_OLD_NUMPY: list[Any] = [
    np.zeros(1).__reduce__()[0],
    np.ndarray,
    np.dtype,
    type(np.dtype(np.float64)),
    type(np.dtype(np.float32)),
]


def replay_file_in(folder: str | os.PathLike[str], recorded: Any) -> Path:
    """The replay file a checkpoint names (`recorded`: its "replay_file" entry), inside `folder`
    (the checkpoint's own folder): a checkpoint reads its replay only from beside it.

    `recorded` is a file name (or, from checkpoints of earlier versions, an absolute path whose
    folder is `folder`).

    Raises:
        ReplayFileRefused: `recorded` is not a string, or names a file that is not in `folder`
            (another folder, `..`, or a link leading out of it).
    """
    folder = Path(folder)
    if not isinstance(recorded, str) or not recorded:
        raise ReplayFileRefused(f"the checkpoint's replay_file entry is {recorded!r}, not a file name")
    given = Path(recorded)
    if given.is_absolute():  # earlier versions: accepted where it names this folder
        path = folder / given.name if given.parent == folder.absolute() else given
    else:
        path = folder / given
    if path.resolve().parent != folder.resolve():
        raise ReplayFileRefused(
            f"the checkpoint names the replay file {recorded!r}, which is not a file of its folder "
            f"{folder}: a checkpoint's replay is read only from beside it"
        )
    return path


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
        ReplayFileRefused: the file holds objects other than tensors and plain values (it is not
            read further: unpickling them could run code), or is not a readable torch file.
        ValueError: the file holds another kind or shape of replay.
    """
    path = Path(path)
    try:
        with torch.serialization.safe_globals(_OLD_NUMPY):
            state = torch.load(path, weights_only=True)
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise ReplayFileRefused(
            f"replay file {path} holds objects other than tensors and plain values, which are not "
            f"loaded as they could run code ({first.strip()})"
        ) from e
    except (RuntimeError, EOFError, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ReplayFileRefused(f"replay file {path} is damaged or not a torch file ({e})") from e
    replay.load_state_dict(state)
