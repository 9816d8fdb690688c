"""The user's main module and the async placement's children, which import it again.

A child started by multiprocessing's "forkserver" or "spawn" method first runs the parent's main
module again, under the name `__mp_main__` (so that functions and classes defined there can be
unpickled): a script by its path (`__main__.__file__`), a `python -m` module by its name. Two
things go wrong for a user of `surge.train` (issue 55, item 6):

- `__main__.__file__` that names no file: `python - <<EOF` sets it to "<stdin>", and each child
  failed with `FileNotFoundError: '<stdin>'`. `children_skip_an_unreadable_main` hides it while a
  child starts; the child then runs no main module, as for `python -c` or a notebook.
- A script that calls `train(...)` at its top level, outside `if __name__ == "__main__":`: each
  child calls `train` again while it imports the script, which multiprocessing refuses with its
  raw "bootstrapping phase" traceback (and which could touch the run's own folder).
  `unguarded_call_site` finds such a call before any process starts; `importing_main_in_a_child`
  catches the calls it cannot see (a call under `try:`, say).
"""

from __future__ import annotations

import ast
import contextlib
import multiprocessing.process
import os
import sys
from collections.abc import Iterator
from types import FrameType, ModuleType


def _path_for_children(main: ModuleType) -> str | None:
    """The file multiprocessing tells a child to run again as `__mp_main__`
    (`multiprocessing.spawn.get_preparation_data`): None for a `python -m` module (imported by
    name) and for a main module without `__file__` (`python -c`, a notebook, the REPL)."""
    if getattr(getattr(main, "__spec__", None), "name", None) is not None:
        return None
    path = getattr(main, "__file__", None)
    if path is None:
        return None
    # the folder multiprocessing resolves a relative path against: the one the program started in
    original_dir = getattr(multiprocessing.process, "ORIGINAL_DIR", None)
    if not os.path.isabs(path) and original_dir is not None:
        path = os.path.join(original_dir, path)
    return os.path.normpath(path)


@contextlib.contextmanager
def children_skip_an_unreadable_main() -> Iterator[None]:
    """While a child process is started (`Process.start()`): when the main module's `__file__`
    names no file ("<stdin>" for `python -`), it is removed, so the child does not try to run it
    again; restored after. Nothing defined in such a main module can reach a child anyway (there
    is no file to import it from); surge's roles live in surge's modules."""
    main = sys.modules.get("__main__")
    path = None if main is None else _path_for_children(main)
    if main is None or path is None or os.path.isfile(path):
        yield
        return
    saved = main.__dict__.pop("__file__")
    try:
        yield
    finally:
        main.__file__ = saved


def importing_main_in_a_child() -> bool:
    """True while this process is a child of multiprocessing that runs the parent's main module
    again before its own target: the phase in which multiprocessing refuses to start processes
    (`multiprocessing.spawn._check_not_importing_main` reads the same flag)."""
    return bool(getattr(multiprocessing.process.current_process(), "_inheriting", False))


def _conditional_ancestor(body: list[ast.stmt], line: int) -> bool | None:
    """Whether the statement of `body` (nested blocks included) that holds `line` lies inside an
    `if` or `match` (True), outside any (False), or no statement holds it (None)."""
    for stmt in body:
        if not stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            continue
        if isinstance(stmt, (ast.If, ast.Match)):
            return True  # a guard, or a condition we cannot judge: never refuse a script for it
        for name in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, name, None)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not inner:
                continue
            blocks = [h.body for h in inner] if name == "handlers" else [inner]
            for block in blocks:
                found = _conditional_ancestor(block, line)
                if found is not None:
                    return found
        return False
    return None


def unguarded_call_site(frame: FrameType | None) -> tuple[str, int] | None:
    """`(path, line)` of the top-level statement of a script run by its path that led to `frame`
    (a caller's frame), when that statement is under no `if`: the async placement's children run
    the script again and would reach it too. None otherwise (a guarded call, a `python -m` module,
    no main file, a call that does not start in the main module's top level)."""
    main = sys.modules.get("__main__")
    path = None if main is None else _path_for_children(main)
    if main is None or path is None or not os.path.isfile(path):
        return None
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)):
        frame = frame.f_back
    if frame is None:
        return None
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):  # changed or unreadable since it started: no verdict
        return None
    line = frame.f_lineno
    return (path, line) if _conditional_ancestor(tree.body, line) is False else None
