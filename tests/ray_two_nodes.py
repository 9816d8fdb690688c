"""A Ray cluster of two nodes on this machine for the `--distributed=ray` tests: a head (the
driver's node, 1 CPU) and a second node with the custom resource `sampler_node` (1 CPU), started
with `ray start --block` in their own sessions under a temp dir of their own. `stop` kills exactly
the processes it started: their process groups, then any process whose command line names the temp
dir (Ray's workers), never `ray stop` (which would stop every Ray instance on the machine)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))
SAMPLER_RESOURCE = "sampler_node"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TwoNodeCluster:
    """`start()` brings up the head and the sampler node; `address` is the head's GCS address."""

    def __init__(self, object_store_mb: int = 100):
        self.tmp = tempfile.mkdtemp(prefix="h22ray_", dir="/tmp")  # short: Ray's socket paths
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.store = str(object_store_mb * 1024 * 1024)
        self.env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "RAY_USAGE_STATS_ENABLED": "0",
                    "RAY_AUTH_MODE": "disabled"}  # fmt: skip
        self.procs: list[subprocess.Popen] = []

    def _ray_start(self, args: list[str]) -> subprocess.Popen:
        log = open(Path(self.tmp) / f"ray_start_{len(self.procs)}.log", "w")
        p = subprocess.Popen(
            [
                RAY,
                "start",
                "--block",
                "--node-ip-address=127.0.0.1",
                "--num-cpus=1",
                f"--object-store-memory={self.store}",
                *args,
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(p)
        return p

    def start(self) -> TwoNodeCluster:
        self._ray_start(
            ["--head", f"--port={self.port}", f"--temp-dir={self.tmp}", "--include-dashboard=false",
             "--disable-usage-stats", f"--ray-client-server-port={_free_port()}"]
        )  # fmt: skip
        self._wait_nodes(1)
        self.start_sampler_node()
        return self

    def start_sampler_node(self) -> None:
        """Starts (or starts again) the second node with the `sampler_node` resource."""
        self._ray_start([f"--address={self.address}", f'--resources={{"{SAMPLER_RESOURCE}": 1}}'])
        self._wait_nodes(2)

    def _wait_nodes(self, n: int, timeout: float = 120.0) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            out = subprocess.run(
                [RAY, "status", f"--address={self.address}"], env=self.env, capture_output=True, text=True
            )
            if out.returncode == 0 and out.stdout.count("node_") >= n:
                return
            time.sleep(1.0)
        raise TimeoutError(f"Ray cluster at {self.address}: {n} node(s) not up after {timeout:.0f} s")

    def sampler_node_pids(self) -> list[int]:
        """The SamplerNode actor's process and its children (rollout and inference workers), among
        the processes of the second node (those of `ray start --address=...`, restarts included)."""
        pids = []
        for started in self.procs[1:]:
            try:
                family = psutil.Process(started.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                continue
            for p in family:
                try:
                    if "ray::SamplerNode" in " ".join(p.cmdline()):
                        pids += [p.pid] + [c.pid for c in p.children(recursive=True)]
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
        return pids

    def _ours(self) -> list[psutil.Process]:
        found = []
        for p in psutil.process_iter(["pid", "cmdline"]):
            try:
                if self.tmp in " ".join(p.info["cmdline"] or []) and p.pid != os.getpid():
                    found.append(p)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return found

    def stop(self) -> None:
        """Kills every process this cluster started (see the module docstring) and its temp dir."""
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + 10
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self._ours():
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)
