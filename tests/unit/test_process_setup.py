"""setup_child: what --default_niceness, --set_workers_cpu_affinity, --num_torch_threads and
--force_envs_single_thread do to a child process of the async placement."""

import multiprocessing as mp
import os
import signal
import subprocess
import sys

import numpy  # noqa: F401 - loads its BLAS, so threadpoolctl has a pool to limit
import pytest
import torch

from surge.runtime.process_setup import setup_child


def _child(q, niceness, cpu, threads, single):
    setup_child("t", niceness=niceness, cpu=cpu, torch_threads=threads, single_thread_envs=single)
    from threadpoolctl import threadpool_info

    q.put(
        {
            "nice": os.nice(0),
            "cpus": sorted(os.sched_getaffinity(0)),
            "torch_threads": torch.get_num_threads(),
            "pool_threads": [p["num_threads"] for p in threadpool_info()],
            "sigint": signal.getsignal(signal.SIGINT) == signal.SIG_IGN,
        }
    )


def _run(*args):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q, *args))
    p.start()
    out = q.get(timeout=60)
    p.join(timeout=30)
    assert p.exitcode == 0
    return out


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux only")
def test_child_gets_niceness_one_core_thread_counts_and_ignores_ctrl_c():
    base_nice = os.nice(0)
    cores = sorted(os.sched_getaffinity(0))
    out = _run(3, 1, 1, True)
    assert out["nice"] == base_nice + 3
    assert out["cpus"] == [cores[1 % len(cores)]]
    assert out["torch_threads"] == 1
    assert out["pool_threads"] and all(n == 1 for n in out["pool_threads"])
    assert out["sigint"]


def test_child_keeps_its_defaults_when_nothing_is_asked():
    cores = sorted(os.sched_getaffinity(0))
    out = _run(0, None, 2, False)
    assert out["nice"] == os.nice(0)
    assert out["cpus"] == cores
    assert out["torch_threads"] == 2


_FAULTS = """
import resource, sys, torch
from surge.runtime.process_setup import retain_freed_memory
applied = retain_freed_memory() if sys.argv[1] == "tune" else False
def faults(n):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        torch.ones(16 << 20)  # 64 MiB of float32, freed at once
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
faults(20)  # the heap grows to its working size (glibc bins aligned blocks for a while first)
print(applied, faults(5))
"""


def _page_faults(mode: str, env: dict[str, str] | None = None) -> tuple[bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True, env=env
    ).stdout.split()
    return out[0] == "True", int(out[1])


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc")
def test_retained_memory_spares_the_page_faults_of_large_tensors_unless_the_user_set_malloc_env():
    pages = (64 << 20) // 4096  # per 64 MiB tensor
    _, plain = _page_faults("plain")
    applied, tuned = _page_faults("tune")
    assert plain > 4 * pages  # each tensor is a fresh mmap: a fault per page
    assert applied and tuned < pages // 10  # the heap's pages are reused
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    applied, faults = _page_faults("tune", env)
    assert not applied and faults > 4 * pages  # the user's MALLOC_* setting wins: nothing changed


_SERIAL_THREADS = """
import sys, torch
from surge.app.resolve import parse_cfg
from surge.runtime.serial import SerialPlacement
torch.set_num_threads(2)
cfg = parse_cfg(["--env=CartPole-v1", "--serial_mode=True", "--num_workers=1",
                 "--num_envs_per_worker=2", "--train_dir=" + sys.argv[1], *sys.argv[2:]])
SerialPlacement(cfg, [], [None]).start()
print(torch.get_num_threads())
"""


@pytest.mark.parametrize(
    ("flag", "threads"), [([], 1), (["--num_torch_threads=0"], 2), (["--num_torch_threads=3"], 3)]
)
def test_serial_placement_uses_one_torch_thread_unless_told(tmp_path, flag, threads):
    """One thread by default, whatever the process had (here 2, as torch's own count on 2 cores,
    which `--num_torch_threads=0` keeps)."""
    out = subprocess.run(
        [sys.executable, "-c", _SERIAL_THREADS, str(tmp_path), *flag],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert int(out.stdout.split()[-1]) == threads
