"""Atomic checkpoints: latest N, best by mean return, milestones.

A checkpoint is written to a temporary file in the same folder, fsynced, then renamed over its
final name (and the folder fsynced), so a crash at any point leaves either the previous set of
checkpoints or the new one, never a half-written file under a checkpoint's name. Files hold only
tensors and plain Python values, so they load with `torch.load(weights_only=True)`.

A state holding a NaN or ±inf in any floating-point tensor (weights, normalisers, optimizer
moments) is never written: resuming from it would only continue a poisoned run.
"""

from __future__ import annotations

import errno
import logging
import os
import pickle
import random
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

log = logging.getLogger("surge")

_NAME = re.compile(r"^(checkpoint|best|milestone)_v(\d+)_f(\d+)\.pth$")


def atomic_torch_save(obj: Any, path: Path) -> None:
    """`torch.save(obj, path)` so that `path` is either absent/old or complete (temp + fsync + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp_", suffix=".pth", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def rng_state() -> dict[str, Any]:
    """The RNG states of torch, numpy and Python's `random`, as weights_only-loadable values."""
    # the legacy tuple (get_state's default); numpy's stub also allows the dict of legacy=False
    state = cast("tuple[str, np.ndarray, int, int, float]", np.random.get_state())
    kind, keys, pos, has_gauss, cached = state
    py_version, py_state, py_gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "numpy": {
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached": float(cached),
        },
        "python": {"version": py_version, "state": list(py_state), "gauss": py_gauss},
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restores what `rng_state` returned."""
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state(
        ("MT19937", n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached"])
    )
    p = state["python"]
    random.setstate((p["version"], tuple(p["state"]), p["gauss"]))


def checkpoint_name(kind: str, policy_version: int, env_frames: int) -> str:
    """File name of a checkpoint: `{kind}_v{policy_version:09d}_f{env_frames:012d}.pth`."""
    return f"{kind}_v{policy_version:09d}_f{env_frames:012d}.pth"


def nonfinite_tensors(obj: Any, prefix: str = "") -> list[str]:
    """The names (dotted paths) of the floating-point tensors in a nested dict/list of `obj` that
    hold a NaN or ±inf; empty when all are finite."""
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point() and not bool(torch.isfinite(obj).all()):
            return [prefix or "<tensor>"]
        return []
    items: Any = ()
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    found: list[str] = []
    for k, v in items:
        found += nonfinite_tensors(v, f"{prefix}.{k}" if prefix else str(k))
    return found


class CheckpointManager:
    """Writes and finds the checkpoints of one policy in `folder`.

    Args:
        folder: `train_dir/experiment/checkpoint_p{policy_id}`.
        keep_checkpoints: how many `checkpoint_*` files to keep (oldest removed first).
        policy_id: the policy whose checkpoints these are (named in errors).
    """

    def __init__(self, folder: Path, keep_checkpoints: int = 3, policy_id: int | None = None):
        self.folder = Path(folder)
        self.keep = max(1, keep_checkpoints)
        self.name = f"policy {policy_id}" if policy_id is not None else str(self.folder)
        self.last_refusal = ""  # why the last refused `save` wrote nothing

    def remove_partial_writes(self) -> list[Path]:
        """Deletes the temporary files of writes that a killed process left unfinished (never a
        checkpoint: those are complete by construction); returns them. Call only while no process
        writes into this folder (at the start of a run)."""
        if not self.folder.is_dir():
            return []
        partial = sorted(self.folder.glob(".tmp_*.pth"))
        for p in partial:
            p.unlink(missing_ok=True)
        return partial

    def _list(self, kind: str) -> list[Path]:
        if not self.folder.is_dir():
            return []
        found = []
        for p in self.folder.iterdir():
            m = _NAME.match(p.name)
            if m and m.group(1) == kind:
                found.append((int(m.group(2)), int(m.group(3)), p))
        return [p for *_, p in sorted(found)]

    def save(
        self, state: dict[str, Any], policy_version: int, env_frames: int, kind: str = "checkpoint"
    ) -> Path | None:
        """Writes `state` atomically as a `kind` checkpoint (checkpoint, best or milestone).

        Keeps the latest `keep_checkpoints` regular checkpoints and only the `best` just written.

        Returns:
            the path written, or None when `state` holds a non-finite floating-point tensor: then
            nothing is written or removed (the previous checkpoint stays the latest), an error
            naming the policy and the tensors is logged, and `last_refusal` says why ("N tensor(s)
            hold NaN or inf (names)", the names in the state's order: model weights first).
        """
        bad = nonfinite_tensors(state)
        if bad:
            shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
            self.last_refusal = f"{len(bad)} tensor(s) hold NaN or inf ({shown})"
            log.error(
                "Not writing the %s checkpoint of %s: %s; the previous checkpoint stays the latest.",
                kind,
                self.name,
                self.last_refusal,
            )
            return None
        path = self.folder / checkpoint_name(kind, policy_version, env_frames)
        atomic_torch_save(state, path)
        if kind == "checkpoint":
            for old in self._list("checkpoint")[: -self.keep]:
                old.unlink(missing_ok=True)
        elif kind == "best":
            # the one just written is the best, whatever its version: after a resume from an
            # older checkpoint a better best can have a lower policy_version than the previous one
            for old in self._list("best"):
                if old != path:
                    old.unlink(missing_ok=True)
        return path

    def latest(self, kind: str = "latest") -> Path | None:
        """Path of the newest checkpoint of `kind` ('latest' = regular checkpoints, or 'best')."""
        files = self._list("checkpoint" if kind == "latest" else kind)
        return files[-1] if files else None

    def load(
        self,
        kind: str = "latest",
        path: Path | None = None,
        map_location: str = "cpu",
        move_damaged: bool = False,
    ) -> dict[str, Any] | None:
        """Loads the newest loadable checkpoint of `kind` (or `path`) with `weights_only=True`.

        A damaged file (truncated, corrupted, not a torch file, or holding objects other than
        tensors and plain values: see `damage`) is reported as damaged and the next older one is
        tried; with `move_damaged` (a resuming training run) it is also renamed to
        `<name>.damaged`, so later resumes neither load nor report it again. A file that cannot be
        read at all (an I/O error, no permission) is reported and skipped, never moved.
        Returns None when there is none.
        """
        candidates = (
            [Path(path)] if path else list(reversed(self._list("checkpoint" if kind == "latest" else kind)))
        )
        for p in candidates:
            try:
                state = torch.load(p, map_location=map_location, weights_only=True)
            except Exception as e:  # noqa: BLE001 - report and fall back to an older file
                why = damage(p, e)
                if why is None:
                    log.warning("Could not read checkpoint %s (%s); trying an older one.", p, e)
                    continue
            else:
                if isinstance(state, dict):
                    log.info("Loaded checkpoint %s", p)
                    return state
                why = f"it holds a {type(state).__name__}, not a checkpoint's dict"
            self._report_damaged(p, why, move_damaged)
        return None

    def _report_damaged(self, path: Path, why: str, move: bool) -> None:
        moved = ""
        if move:
            aside = path.with_name(path.name + DAMAGED_SUFFIX)
            try:
                os.replace(path, aside)
                moved = f"; moved aside to {aside.name} (kept, never loaded again)"
            except OSError as e:
                moved = f"; could not move it aside ({e})"
        log.warning("Checkpoint %s is damaged (%s)%s; trying the previous one.", path, why, moved)


#: what a damaged checkpoint is renamed to end with (`CheckpointManager.load(move_damaged=True)`)
DAMAGED_SUFFIX = ".damaged"


def damage(path: Path, error: BaseException) -> str | None:
    """Why `torch.load(path, weights_only=True)` failed with `error` if the file's content is the
    cause (the file is damaged: truncated, corrupted, not a torch file, or holding objects that a
    weights-only load refuses), else None (the file could not be read, or the load failed for
    another reason, such as a missing device or memory).

    A truncated torch file often fails as `OSError: [Errno 22] Invalid argument` (torch's zip
    reader seeking past the end): that is taken as damage only when the file itself reads whole.
    """
    if isinstance(error, pickle.UnpicklingError) and "Unsupported global" in str(error):
        return "it holds objects other than tensors and plain values, which are not loaded"
    content = isinstance(error, (EOFError, zipfile.BadZipFile, pickle.UnpicklingError)) or (
        isinstance(error, RuntimeError) and any(m in str(error) for m in _TORCH_FORMAT_ERRORS)
    )
    if not content:  # torch reads a file that is not a zip as a legacy pickle, whose errors on
        try:  # random bytes can be of any type (ValueError, UnicodeDecodeError, ...)
            with open(path, "rb") as f:
                content = f.read(4) != ZIP_MAGIC  # surge writes torch's zip format only
        except OSError:
            return None
    if not content and not (isinstance(error, OSError) and error.errno == errno.EINVAL):
        return None
    try:
        with open(path, "rb") as f:
            size = 0
            while chunk := f.read(1 << 24):
                size += len(chunk)
    except OSError:
        return None  # not readable: an I/O problem, not (known) damage
    if isinstance(error, pickle.UnpicklingError):  # torch's message is advice on weights_only
        detail = "neither a torch zip file nor a loadable legacy one"
    else:
        detail = str(error).strip().splitlines()[0][:160] if str(error).strip() else "empty"
    return f"{size} bytes, not a complete torch file: {type(error).__name__}: {detail}"


ZIP_MAGIC = b"PK\x03\x04"  # the first bytes of every file torch.save writes (its zip format)
# torch's messages for a file that is not a (complete) torch zip file
_TORCH_FORMAT_ERRORS = ("PytorchStreamReader", "zip archive", "legacy .tar format", "invalid header")


def log_no_checkpoint(
    ckpts: list[CheckpointManager], root: Path, earlier_run: bool, save_every_sec: float
) -> None:
    """Says that a resuming run found no checkpoint of any policy in `root` and starts from frame 0:
    a warning when a run was there before (`earlier_run`: the folder had a cfg.json; it was
    stopped before its first checkpoint, or its checkpoints were damaged), else (a new run) info."""
    damaged = [
        p.name for c in ckpts if c.folder.is_dir() for p in sorted(c.folder.glob("*" + DAMAGED_SUFFIX))
    ]
    if not earlier_run:
        log.info("No checkpoint in %s: a new run, starting from env frame 0.", root)
        return
    why = (
        f"{len(damaged)} damaged checkpoint(s) were moved aside ({', '.join(damaged[:3])}"
        f"{' ...' if len(damaged) > 3 else ''})"
        if damaged
        else f"the earlier run stopped before its first checkpoint (one is written every "
        f"--save_every_sec={save_every_sec:g} s and at the end of a run)"
    )
    log.warning(
        "No checkpoint found in %s (%s): the run starts from env frame 0.",
        root,
        why,
    )
