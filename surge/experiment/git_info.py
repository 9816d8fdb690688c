"""The git revision of the code a run ran, kept in its experiment folder, as Sample Factory does.

Sample Factory stores `git_hash` and `git_repo_name` (the `origin` remote's URL) of the working
directory's repository in cfg.json; surge does the same, falls back to the checkout that holds
surge's own source when the working directory is not in one, and also writes `git_diff.patch`
(`git diff HEAD`: staged and unstaged changes of tracked files) when the tree has changes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
from pathlib import Path

log = logging.getLogger("surge")

GIT_TIMEOUT_SEC = 10.0
#: Sample Factory's values when the code is not in a git checkout
UNKNOWN_HASH, NO_REPO = "unknown", "not a git repository"


@dataclasses.dataclass
class GitRevision:
    """One checkout's state. `root`: its top folder; `commit`: HEAD's 40-hex hash; `repo_name`: the
    `origin` remote's URL (the root's path when it has none); `diff`: `git diff HEAD` ("" when
    clean); `untracked`: untracked files (not in the diff)."""

    root: Path
    commit: str
    repo_name: str
    diff: str
    untracked: list[str]


def _git(args: list[str], cwd: Path) -> str:
    """git's stdout, decoded as UTF-8 with surrogate escapes: bytes that are not UTF-8 (a Latin-1
    file in the diff) survive and are written back unchanged (`record_code_revision`)."""
    out = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_SEC, check=True
    ).stdout
    return out.decode("utf-8", errors="surrogateescape")


def git_revision(directory: Path | str) -> GitRevision | None:
    """The revision of the checkout holding `directory`; None when it is in none, when git is not
    installed, or the repository has no commit yet."""
    directory = Path(directory)
    if not directory.is_dir():
        return None
    try:
        root = Path(_git(["rev-parse", "--show-toplevel"], directory).strip())
        commit = _git(["rev-parse", "HEAD"], root).strip()
        diff = _git(["diff", "HEAD"], root)
        untracked = _git(["ls-files", "--others", "--exclude-standard"], root).splitlines()
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    try:
        repo_name = _git(["config", "--get", "remote.origin.url"], root).strip() or str(root)
    except (OSError, subprocess.SubprocessError, ValueError):
        repo_name = str(root)
    return GitRevision(root, commit, repo_name, diff, untracked)


def _surge_source() -> Path:
    # the package's folder, two up from this file (not `surge.__file__`: importing the package
    # from here would reach its public API, the top layer)
    return Path(__file__).resolve().parent.parent


def code_revision() -> GitRevision | None:
    """The revision of the code this process runs: the working directory's checkout (Sample
    Factory's choice: where a user's own code lives), else the checkout of surge's source; None
    when neither is one."""
    for d in (Path(os.getcwd()), _surge_source()):
        rev = git_revision(d)
        if rev is not None:
            return rev
    return None


def record_code_revision(folder: Path | str, revision: GitRevision | None = None) -> GitRevision | None:
    """Adds `git_hash` and `git_repo_name` to `folder/cfg.json` (atomically) and writes
    `folder/git_diff.patch` when the tree has uncommitted changes (a stale one is removed when it
    has none); says in the log what it recorded, or that the code is in no git checkout (then
    Sample Factory's "unknown" / "not a git repository"). `revision`: default `code_revision()`."""
    folder = Path(folder)
    rev = revision if revision is not None else code_revision()
    cfg_file, patch = folder / "cfg.json", folder / "git_diff.patch"
    values = json.loads(cfg_file.read_text()) if cfg_file.exists() else {}
    values["git_hash"] = rev.commit if rev else UNKNOWN_HASH
    values["git_repo_name"] = rev.repo_name if rev else NO_REPO
    folder.mkdir(parents=True, exist_ok=True)
    tmp = cfg_file.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(values, indent=2))
    tmp.replace(cfg_file)
    if rev is None:
        log.info(
            "Code revision: not recorded: neither the working directory nor surge's source (%s) is in a git "
            "checkout (cfg.json: git_hash=%s).",
            _surge_source(),
            UNKNOWN_HASH,
        )
        return None
    if rev.diff:
        tmp_patch = patch.with_suffix(".patch.tmp")
        tmp_patch.write_bytes(rev.diff.encode("utf-8", errors="surrogateescape"))  # git's bytes
        tmp_patch.replace(patch)
    elif patch.exists():
        patch.unlink()
    log.info(
        "Code revision: %s of %s%s%s.",
        rev.commit,
        rev.repo_name,
        f", with uncommitted changes saved in {patch}" if rev.diff else ", no uncommitted changes",
        f" ({len(rev.untracked)} untracked file(s) are not in it)" if rev.untracked else "",
    )
    return rev
