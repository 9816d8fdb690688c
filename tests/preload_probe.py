"""Run as a program: starts surge's fork server with `colorsys` (a standard-library module nothing
here imports) as an env family's preload, forks a child from it, and prints whether the child had
the module before importing anything itself (tests/unit/test_env_preload.py)."""

import sys


def report(queue, name):  # type: ignore[no-untyped-def]
    queue.put(name in sys.modules)


if __name__ == "__main__":
    from surge.runtime.child_start import process_context, start_fork_server

    assert "colorsys" not in sys.modules
    ctx = process_context(tuple(sys.argv[1:]))
    start_fork_server(ctx)
    q = ctx.Queue()
    p = ctx.Process(target=report, args=(q, "colorsys"))
    p.start()
    print("child has colorsys:", q.get(timeout=60))
    p.join()
