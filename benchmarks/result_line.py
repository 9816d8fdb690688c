"""Runs one benchmark side in a fresh process and reads its result: the child prints one line
`RESULT {json}` (`print_result`); the parent gets the dict (`run_for_result`), so start-up costs
and warm caches do not leak between the runs it compares."""

from __future__ import annotations

import json
import subprocess
from typing import Any

PREFIX = "RESULT "


def print_result(result: dict[str, Any]) -> None:
    """The child's side: prints `result` as the line `run_for_result` reads."""
    print(PREFIX + json.dumps(result), flush=True)


def run_for_result(cmd: list[str], env: dict[str, str], cwd: str, timeout: float) -> dict[str, Any]:
    """Runs `cmd`; the dict of its last `RESULT` line, or `{"error": ...}` (a timeout, or the tail
    of its stderr when it printed none)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout}s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX) :])
    return {"error": f"no result (rc {proc.returncode}): {proc.stderr[-1500:]}"}
