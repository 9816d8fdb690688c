"""The code blocks of the docs that are meant to run, run as written (issue 55, item 6).

The convention, for README.md and docs/*.md: the line right before a fenced block says what the
test does with it.

- `<!-- doc-test: run -->`: the block runs. The marked blocks of one page run in their order, in one
  fresh folder that is the current folder of each (so a later block may use what an earlier one
  wrote: `train_dir/...`). A ```python block runs as a script file (`python block.py`); each line
  of a ```bash block that is not a comment runs in bash, with the `surge` console script of this
  Python on PATH and this checkout first on PYTHONPATH.
- `<!-- doc-test: skip REASON -->`: the block is not run, for the reason given.

Before a block runs, its budgets are shrunk (`_shrink`): `train_for_env_steps=N` (a keyword or a
`--flag=`) becomes 2000 env frames and `--max_num_episodes=N` becomes 1. Commands whose program is
in `SKIPPED_PROGRAMS` are not run (the reason is there). A page's prerequisites that a block's own
words name (README's `my_module.py`) are written by `PREPARE`.

Every ```python block of docs/python_api.md and every README block with a `surge` command carries a
mark (`test_the_pages_blocks_are_marked`), so a new example cannot go untested unnoticed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", "docs/python_api.md"]
MARK = re.compile(r"^<!-- doc-test: (run|skip (.+)) -->$")
SURGE_SCRIPT = Path(sys.executable).with_name("surge")

#: the first word of a bash line that is not run, and why
SKIPPED_PROGRAMS = {"tensorboard": "a server that runs until it is stopped"}

#: files a page's blocks expect in the current folder, as the page describes them
PREPARE = {
    "README.md": {
        # "surge check-env --env=my_module:MyEnv-v0  # ... (my_module.py in this folder registers it)"
        "my_module.py": textwrap.dedent(
            """
            import gymnasium as gym

            gym.register("MyEnv-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv")
            """
        )
    }
}


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    mark: str | None  # "run", "skip", or None (unmarked)
    reason: str = ""


def blocks(page: str) -> list[Block]:
    """The fenced blocks of `page` (relative to the repository), each with its mark."""
    lines = (ROOT / page).read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = re.match(r"^```(\w+)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        end = lines.index("```", i + 1)
        m = MARK.match(lines[i - 1]) if i else None
        mark = None if m is None else m.group(1).split()[0]
        reason = "" if m is None or m.group(2) is None else m.group(2)
        found.append(Block(page, i + 1, fence.group(1), "\n".join(lines[i + 1 : end]) + "\n", mark, reason))
        i = end + 1
    return found


def _shrink(code: str) -> str:
    """The block with short budgets: 2000 env frames of training, one episode of play."""
    code = re.sub(r"(train_for_env_steps\s*=\s*)[\d_]+", r"\g<1>2000", code)
    return re.sub(r"(--max_num_episodes=)\d+", r"\g<1>1", code)


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(SURGE_SCRIPT.parent), os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "SDL_VIDEODRIVER": "dummy",
        "SDL_AUDIODRIVER": "dummy",
    }


def _commands(block: Block, folder: Path) -> list[tuple[list[str], str]]:
    """(argv, what) of each command of the block, its budgets shrunk."""
    code = _shrink(block.code)
    if block.lang == "python":
        script = folder / f"block_line{block.line}.py"
        script.write_text(code)
        return [([sys.executable, script.name], f"{block.page}:{block.line} (python block)")]
    assert block.lang == "bash", f"{block.page}:{block.line}: run marks are for python and bash blocks"
    out = []
    for text in code.splitlines():
        command = text.split("#", 1)[0].strip()
        if command and command.split()[0] not in SKIPPED_PROGRAMS:
            out.append((["bash", "-c", command], f"{block.page}:{block.line}: {command}"))
    return out


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_blocks_are_marked(page):
    for block in blocks(page):
        has_surge_command = block.lang == "bash" and re.search(r"^(.*&& )?surge ", block.code, re.M)
        if block.lang == "python" or has_surge_command:
            assert block.mark, (
                f"{page}:{block.line}: no <!-- doc-test: run --> or <!-- doc-test: skip REASON -->"
            )
        if block.mark == "skip":
            assert block.reason.strip(), f"{page}:{block.line}: a skip says why"


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_the_pages_marked_blocks_run_as_written(page, tmp_path):
    if not SURGE_SCRIPT.exists():
        pytest.skip(f"no `surge` console script at {SURGE_SCRIPT} (pip install -e .)")
    to_run = [b for b in blocks(page) if b.mark == "run"]
    assert to_run, f"{page} has no block marked to run"
    for name, text in PREPARE.get(page, {}).items():
        (tmp_path / name).write_text(text)
    for block in to_run:
        for argv, what in _commands(block, tmp_path):
            out = subprocess.run(argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, f"{what} exited with {out.returncode}:\n{out.stderr[-3000:]}"
