"""The experiment folder keeps the git revision of the code it ran (Sample Factory's `git_hash` and
`git_repo_name` in cfg.json) and `git_diff.patch` when the tree has uncommitted changes; git's own
output (rev-parse, diff) is the reference."""

import json
import logging
import shutil
import subprocess

import pytest

from surge.experiment import git_info
from surge.experiment.git_info import code_revision, git_revision, record_code_revision

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "code"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    _git(repo, "remote", "add", "origin", "https://example.com/me/code.git")
    (repo / "train.py").write_text("print('v1')\n")
    _git(repo, "add", "train.py")
    _git(repo, "commit", "-q", "-m", "v1")
    return repo


def test_clean_and_dirty_checkout_recorded(repo, tmp_path, monkeypatch, caplog):
    head = _git(repo, "rev-parse", "HEAD").strip()
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "cfg.json").write_text(json.dumps({"env": "CartPole-v1"}))
    monkeypatch.chdir(repo / ".")  # the working directory's checkout: Sample Factory's choice
    assert code_revision().root.resolve() == repo.resolve()

    record_code_revision(folder)
    cfg = json.loads((folder / "cfg.json").read_text())
    assert cfg == {"env": "CartPole-v1", "git_hash": head, "git_repo_name": "https://example.com/me/code.git"}
    assert not (folder / "git_diff.patch").exists()

    (repo / "train.py").write_text("print('v2')\n")
    with caplog.at_level(logging.INFO, logger="surge"):
        record_code_revision(folder)
    patch = (folder / "git_diff.patch").read_text()
    assert patch == _git(repo, "diff", "HEAD") and "+print('v2')" in patch
    assert "uncommitted changes" in caplog.text and head in caplog.text
    # the patch applies to the recorded revision and gives the code that ran
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(repo), str(clone))
    _git(clone, "checkout", "-q", json.loads((folder / "cfg.json").read_text())["git_hash"])
    _git(clone, "apply", str(folder / "git_diff.patch"))
    assert (clone / "train.py").read_text() == "print('v2')\n"

    # committed again: clean, the stale patch goes
    _git(repo, "commit", "-q", "-am", "v2")
    record_code_revision(folder)
    assert not (folder / "git_diff.patch").exists()
    assert (
        json.loads((folder / "cfg.json").read_text())["git_hash"] == _git(repo, "rev-parse", "HEAD").strip()
    )


def test_not_a_checkout_says_so(tmp_path, monkeypatch, caplog):
    assert git_revision(tmp_path) is None
    monkeypatch.setattr(git_info, "code_revision", lambda: None)
    folder = tmp_path / "exp"
    with caplog.at_level(logging.INFO, logger="surge"):
        assert record_code_revision(folder) is None
    cfg = json.loads((folder / "cfg.json").read_text())
    assert cfg == {"git_hash": "unknown", "git_repo_name": "not a git repository"}
    assert "not recorded" in caplog.text


def test_a_diff_that_is_not_utf8_is_recorded_byte_for_byte(repo, tmp_path, monkeypatch):
    # a Latin-1 source file with uncommitted changes: the run starts, and the patch gives its bytes
    (repo / "notes.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    _git(repo, "add", "notes.txt")
    _git(repo, "commit", "-q", "-m", "latin-1")
    changed = "na\xefve \xe9t\xe9\n".encode("latin-1")
    (repo / "notes.txt").write_bytes(changed)
    folder = tmp_path / "exp"
    monkeypatch.chdir(repo)
    rev = record_code_revision(folder)
    assert rev is not None and rev.commit == _git(repo, "rev-parse", "HEAD").strip()
    expected = subprocess.run(["git", "diff", "HEAD"], cwd=repo, check=True, capture_output=True).stdout
    assert (folder / "git_diff.patch").read_bytes() == expected
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(repo), str(clone))
    _git(clone, "apply", str(folder / "git_diff.patch"))
    assert (clone / "notes.txt").read_bytes() == changed
