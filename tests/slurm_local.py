"""A single-node Slurm cluster on localhost for tests: `slurmctld` and `slurmd` of Debian's
slurm-wlm with a minimal slurm.conf in a temporary folder (no munge: `AuthType=auth/none`, no
accounting database, its own ports), started and stopped by `local_slurm`.

Also a script, to try the runner by hand:
    python tests/slurm_local.py start /tmp/slurm   # prints `export SLURM_CONF=...`
    python tests/slurm_local.py stop /tmp/slurm
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd")


class SlurmUnavailable(RuntimeError):
    """Slurm cannot run here; the message says why."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_conf(root: Path) -> Path:
    """slurm.conf for one node (this host, all its CPUs), one partition `debug`; returns its path."""
    host = socket.gethostname().split(".")[0]
    user = getpass.getuser()
    for d in ("state", "spool"):
        (root / d).mkdir(parents=True, exist_ok=True)
    conf = root / "slurm.conf"
    conf.write_text(
        f"""ClusterName=surgetest
SlurmctldHost={host}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/none
CredType=cred/none
SlurmUser={user}
SlurmdUser={user}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=10
NodeName={host} CPUs={os.cpu_count() or 1} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
    )
    return conf


def start(root: Path, timeout: float = 60.0) -> dict[str, str]:
    """Starts the daemons; returns the environment variables that point clients at them.

    Raises:
        SlurmUnavailable: no slurmctld/slurmd/sbatch here, a daemon exits, or the node is not idle
            within `timeout` seconds (the message holds the daemons' log tails).
    """
    missing = [c for c in (*DAEMONS, "sbatch", "squeue", "sinfo", "scontrol") if shutil.which(c) is None]
    if missing:
        raise SlurmUnavailable(f"not installed: {', '.join(missing)} (Debian: apt-get install slurm-wlm)")
    conf = write_conf(root)
    env = dict(os.environ, SLURM_CONF=str(conf))
    for daemon in DAEMONS:
        res = subprocess.run([daemon, "-f", str(conf)], env=env, capture_output=True, text=True, timeout=60)
        if res.returncode != 0:
            stop(root)
            raise SlurmUnavailable(
                f"{daemon} exited with {res.returncode}: {res.stderr.strip()} {_logs(root)}"
            )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        res = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=30)
        if res.returncode == 0 and res.stdout.strip() == "idle":
            return {"SLURM_CONF": str(conf)}
        time.sleep(0.5)
    stop(root)
    raise SlurmUnavailable(f"the node was not idle after {timeout:.0f} s. {_logs(root)}")


def _logs(root: Path) -> str:
    parts = []
    for daemon in DAEMONS:
        log = root / f"{daemon}.log"
        if log.exists():
            parts.append(f"{log}: " + " | ".join(log.read_text().splitlines()[-5:]))
    return " ".join(parts)


def stop(root: Path) -> None:
    """Stops the daemons started in `root` (and the jobs they run): `scontrol shutdown`, then the
    pid files' processes are killed if still there after 15 s."""
    conf = root / "slurm.conf"
    env = dict(os.environ, SLURM_CONF=str(conf))
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["scancel", "--full", "--signal=KILL", "-u", getpass.getuser()], env=env, timeout=30)
        subprocess.run(["scontrol", "shutdown"], env=env, capture_output=True, timeout=30)
    pids = []
    for daemon in DAEMONS:
        with contextlib.suppress(OSError, ValueError):
            pids.append(int((root / f"{daemon}.pid").read_text().strip()))
    deadline = time.monotonic() + 15
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if _alive(p)]
        time.sleep(0.2)
    for p in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie counts as gone
        if Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z"):
            return False
    return True


@contextlib.contextmanager
def local_slurm(root: Path) -> Iterator[dict[str, str]]:
    """`start(root)`, yield its environment variables, `stop(root)` (also on error)."""
    env = start(root)
    try:
        yield env
    finally:
        stop(root)


if __name__ == "__main__":
    what, folder = sys.argv[1], Path(sys.argv[2]).absolute()
    if what == "start":
        print(f"export SLURM_CONF={start(folder)['SLURM_CONF']}")
    else:
        stop(folder)
