"""How the async placement starts its children (`surge.runtime.child_start`): from a fork server
that preloaded torch and the role modules, each child taking its parent's environment variables
and working directory as they are at its start (as a spawned child does), and the server tied to
the main process's life."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from surge.runtime.child_start import FORK_SERVER_PARENT_ENV, ChildTask, child_main, process_context

ROOT = Path(__file__).resolve().parents[2]
_PR_GET_PDEATHSIG = 2


def _report(q) -> None:
    """A child's task: what it started with."""
    q.put(
        {
            "var": os.environ.get("SURGE_TEST_CHILD_VAR"),
            "cwd": os.getcwd(),
            "ppid": os.getppid(),
            "torch_preloaded": "torch" in sys.modules,
        }
    )


def _start(ctx, q):
    p = ctx.Process(target=child_main, args=(ChildTask(_report, q),), daemon=True)
    p.start()
    out = q.get(timeout=120)
    p.join(timeout=30)
    assert p.exitcode == 0
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server and /proc: Linux")
def test_a_child_starts_from_the_fork_server_with_its_parents_environment_and_directory(
    tmp_path, monkeypatch
):
    ctx = process_context()
    assert ctx.get_start_method() == "forkserver"
    q = ctx.Queue()
    _start(ctx, q)  # the server is running from here on, with this process's environment of now
    monkeypatch.setenv("SURGE_TEST_CHILD_VAR", "set after the server started")
    monkeypatch.chdir(tmp_path)
    out = _start(ctx, q)
    assert out["var"] == "set after the server started"
    assert out["cwd"] == str(tmp_path)
    # forked by the server, not by this process, from a state where torch was already imported
    assert out["ppid"] != os.getpid()
    assert "forkserver" in Path(f"/proc/{out['ppid']}/cmdline").read_bytes().decode()
    assert out["torch_preloaded"]


def _pdeathsig_after_import(parent_env: str) -> int:
    """The parent-death signal of a fresh interpreter that imported `fork_server_init` with
    `FORK_SERVER_PARENT_ENV` set to `parent_env`."""
    code = (
        "import ctypes, surge.runtime.fork_server_init; s = ctypes.c_int(); "
        f"ctypes.CDLL('libc.so.6').prctl({_PR_GET_PDEATHSIG}, ctypes.byref(s)); print(s.value)"
    )
    env = {**os.environ, FORK_SERVER_PARENT_ENV: parent_env, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG: Linux")
def test_the_fork_server_dies_with_the_process_that_started_it_and_no_other_importer_does():
    assert _pdeathsig_after_import(str(os.getpid())) == signal.SIGKILL  # the server of this process
    assert _pdeathsig_after_import("1") == 0  # a process the variable does not name as its parent
