"""Leaves nothing behind: a supervisor between VizDoom's controller and its engine process.

VizDoom runs its engine as a child process and talks to it through three POSIX shared-memory
objects, `/dev/shm/ViZDoom{SM,MQCtr,MQDoom}<instance_id>`. `DoomGame.close()` removes them, but a
process killed before that (SIGKILL, a crash) leaves the engine running and the segments behind
(Sample Factory's README: `rm /dev/shm/ViZDoom*`).

surge points `DoomGame.set_vizdoom_path` at a small launcher script (written once per user into
the temp folder, see `launcher_path`). The launcher:

- leaves the run's process group for a session of its own, so that a SIGKILL of the whole group
  (`kill -9 -PGID`, `timeout -s KILL`) does not kill it before it cleans up;
- asks the kernel to send it SIGTERM when its parent (the thread that made the game) dies
  (`PR_SET_PDEATHSIG`), and exits at once if that parent is already gone;
- starts the real engine in its own session (Ctrl+C in the terminal reaches surge, which closes
  its games in order, not the engines directly), with `PR_SET_PDEATHSIG=SIGKILL` so the engine
  cannot outlive it;
- when the engine exits or the launcher is told to stop, kills the engine and unlinks the three
  shared-memory objects named after `+viz_instance_id`, then exits with the engine's status.

The launcher is plain Python with no surge imports (it starts in ~30 ms).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path

LAUNCHER_SOURCE = r"""
import ctypes, os, signal, subprocess, sys

REAL_ENGINE = {real!r}
STOP = []
PR_SET_PDEATHSIG = 1
libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent(sig):
    libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)


def _cleanup_shm(args):
    ids = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "+viz_instance_id"]
    for inst in ids:
        for kind in ("SM", "MQCtr", "MQDoom"):
            try:
                os.unlink("/dev/shm/ViZDoom" + kind + inst)
            except OSError:
                pass


def main():
    args = sys.argv[1:]
    engine = None
    try:  # out of the run's process group: a SIGKILL of the whole group leaves it to clean up
        os.setsid()
    except OSError:
        pass

    def stop(signum, frame):
        STOP.append(signum)
        if engine is not None:
            try:
                engine.kill()
            except OSError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(signal.SIGTERM)
    expected = os.environ.get("SURGE_VIZDOOM_PARENT")
    if STOP or os.getppid() == 1 or (expected and os.getppid() != int(expected)):
        _cleanup_shm(args)
        return 1
    engine = subprocess.Popen(
        [REAL_ENGINE, *args],
        preexec_fn=lambda: _die_with_parent(signal.SIGKILL),
        start_new_session=True,
        stdout=subprocess.DEVNULL,  # network-game chatter; errors go to stderr
        cwd=os.path.dirname(os.path.abspath(__file__)),  # the engine writes _vizdoom.ini here, not in the user's cwd
    )

    if STOP:  # told to stop while the engine was starting
        engine.kill()
    while True:
        try:
            code = engine.wait()
            break
        except InterruptedError:
            continue
    _cleanup_shm(args)
    return code if code >= 0 else 128 - code


sys.exit(main())
"""


#: environment variable holding the pid of the process that starts the engine (checked by the launcher)
PARENT_PID_ENV = "SURGE_VIZDOOM_PARENT"


def real_engine_path() -> Path:
    """The `vizdoom` engine binary of the installed vizdoom package."""
    import vizdoom

    return Path(vizdoom.__file__).resolve().parent / "vizdoom"


def _check_private(p: Path) -> None:
    """Refuses a launcher folder or file that another user owns or could write (a planted script).

    Raises:
        PermissionError: naming the path and what is wrong with it.
    """
    st = p.lstat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022 or p.is_symlink():
        raise PermissionError(
            f"{p} is not private to this user (owner uid {st.st_uid}, mode {oct(st.st_mode & 0o777)}): "
            "remove it, or set TMPDIR to a private folder"
        )


def launcher_path() -> Path:
    """Writes (once, atomically) and returns the launcher script for this interpreter and engine.

    The file lives in `<tempdir>/surge-<uid>/`, named after a hash of its content, so several
    Python installs or vizdoom versions on one machine each get their own.
    """
    import hashlib

    body = f"#!{sys.executable}\n" + LAUNCHER_SOURCE.format(real=str(real_engine_path()))
    digest = hashlib.sha1(body.encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"surge-{os.getuid()}"
    path = folder / f"vizdoom_launcher_{digest}"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private(folder)
    if path.exists():
        _check_private(path)
    else:
        tmp = folder / f".{path.name}.{os.getpid()}.{threading.get_ident()}"
        tmp.write_text(body)
        tmp.chmod(0o755)
        os.replace(tmp, path)
    return path
