"""The one log line of a resumed run: where it resumed (env frame) and each policy's version."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any


def resume_line(states: Sequence[dict[str, Any] | None], env_frames: int, learning: Collection[int]) -> str:
    """The line a resumed run logs once: "Resumed from env frame N, policy version V." with one
    policy; with several, each learning policy's version, and its checkpoint's env frame when that
    differs from the run's N (the policies' checkpoints are written one after the other).

    Args:
        states: each policy's latest checkpoint state (None: the policy has none), as
            `TrainingRun._restore_counters` reads them (`env_frames`, `learner.policy_version`).
        env_frames: the run's env frames after the restore (the furthest checkpoint's).
        learning: the policies that learn (frozen ones resume nothing).
    """
    found = [(p, s) for p, s in enumerate(states) if s is not None and p in learning]
    if len(states) == 1 and found:
        return f"Resumed from env frame {env_frames}, policy version {_version(found[0][1])}."
    parts = []
    for p, s in found:
        at = (
            ""
            if int(s["env_frames"]) == env_frames
            else f" (its checkpoint at env frame {int(s['env_frames'])})"
        )
        parts.append(f"policy {p} at version {_version(s)}{at}")
    return f"Resumed from env frame {env_frames}" + (": " + ", ".join(parts) if parts else "") + "."


def _version(state: dict[str, Any]) -> int:
    return int(state["learner"]["policy_version"])
