"""setup_child: what --default_niceness, --set_workers_cpu_affinity, --num_torch_threads and
--force_envs_single_thread do to a child process of the async placement."""

import multiprocessing as mp
import os
import signal

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
