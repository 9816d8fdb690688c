"""The training command lines of the seed documents 000 (Sample Factory's README) and 001 (its
"Running Experiments" page), parsed from the files as written, for tests/integration/test_seed_lines.py.

A training line is a `python -m sample_factory.algorithms.appo.train_appo ...` or
`python -m sample_factory.run_algorithm ...` line that is not a `--help` call. The runner example's
`Experiment` command names no env: its code block (the `RunDescription` module) is executed with
only its import changed to `surge.runner`, and each command its grid generates is a line. A line
in both documents is kept once (its first place).

The seeds live outside the repository: `$SURGE_SEEDS_DIR`, else `/work/shared/seeds`.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

SEEDS_DIR = Path(os.environ.get("SURGE_SEEDS_DIR", "/work/shared/seeds"))
#: the documents whose lines must run: Sample Factory's README and its "Running Experiments" page
SEED_GLOBS = ("000_*.txt", "001_*.txt")
#: Sample Factory's training entry points, and surge's in their place (the only change to a line)
SF_ENTRY = re.compile(
    r"python -m (sample_factory\.algorithms\.appo\.train_appo|sample_factory\.run_algorithm)\b"
)
SURGE_ENTRY = ["-m", "surge.train"]
SF_RUNNER_IMPORT = "from sample_factory.runner.run_description import"
SURGE_RUNNER_IMPORT = "from surge.runner.run_description import"


@dataclass(frozen=True)
class SeedLine:
    """One training line: where it is (`000:235`, or `000:321 #4` for a runner grid's 5th command)
    and its flags as tokens (the entry point left out)."""

    where: str
    args: tuple[str, ...]

    def flag(self, name: str) -> str | None:
        """The value of `--name=value` on the line (the last one when repeated), or None."""
        found = None
        for a in self.args:
            if a.startswith(f"--{name}="):
                found = a.split("=", 1)[1]
        return found


def seed_files() -> list[Path]:
    """The seed documents 000 and 001 ([] when the folder is not on this machine)."""
    return [p for g in SEED_GLOBS for p in sorted(SEEDS_DIR.glob(g))]


def _code_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each fenced code block."""
    blocks, start, lines = [], None, text.splitlines()
    for i, line in enumerate(lines, 1):
        fence = line.strip()
        if fence.startswith("```") and "```" not in fence[3:]:  # not a one-line block (```pip ...```)
            if start is None:
                start = i
            else:
                blocks.append((start + 1, "\n".join(lines[start : i - 1])))
                start = None
    return blocks


def _runner_lines(where: str, code: str) -> list[SeedLine]:
    """The commands of a runner example (`RUN_DESCRIPTION`), executed with surge's runner."""
    namespace: dict = {}
    exec(compile(code.replace(SF_RUNNER_IMPORT, SURGE_RUNNER_IMPORT), where, "exec"), namespace)
    out = []
    description = namespace["RUN_DESCRIPTION"]
    for n, (cmd, *_) in enumerate(description.generate_experiments("train_dir")):
        tokens = shlex.split(cmd)
        at = next(i for i, t in enumerate(tokens) if SF_ENTRY.match(f"python -m {t}"))
        out.append(SeedLine(f"{where} #{n}", tuple(tokens[at + 1 :])))
    return out


def training_lines() -> list[SeedLine]:
    """Every training line of the seed documents 000 and 001 (module docstring)."""
    out: list[SeedLine] = []
    seen: set[tuple[str, ...]] = set()
    for path in seed_files():
        text = path.read_text()
        for first, code in _code_blocks(text):
            where = f"{path.name[:3]}:{first}"
            if SF_RUNNER_IMPORT in code:
                found = _runner_lines(where, code)
            else:
                found = []
                for k, line in enumerate(code.splitlines()):
                    m = SF_ENTRY.search(line)
                    if m is None:
                        continue
                    found.append(
                        SeedLine(f"{path.name[:3]}:{first + k}", tuple(shlex.split(line[m.end() :])))
                    )
            for line in found:
                if "--help" in line.args or line.args in seen:
                    continue
                seen.add(line.args)
                out.append(line)
    return out
