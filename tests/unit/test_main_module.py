"""Which `train(...)` calls of a script its async children would make again (issue 55, item 6):
`surge.runtime.main_module` refuses a call at a script's top level before any process starts, and
accepts one under `if __name__ == "__main__":` (or any `if`: a condition it cannot judge)."""

from __future__ import annotations

import ast
import sys
import textwrap

from surge.runtime.main_module import _conditional_ancestor, children_skip_an_unreadable_main


def _verdict(source: str) -> bool | None:
    """Whether the line holding `train(` is under an `if` (True), not (False), or in no statement."""
    source = textwrap.dedent(source)
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "train(" in text)
    return _conditional_ancestor(ast.parse(source).body, line)


def test_a_call_under_the_main_guard_is_accepted():
    assert _verdict(
        """
        from surge import train

        if __name__ == "__main__":
            run = train(env="CartPole-v1")
        """
    )


def test_a_call_at_the_top_level_is_refused():
    assert (
        _verdict(
            """
            from surge import train
            run = train(env="CartPole-v1")
            """
        )
        is False
    )


def test_a_call_in_a_top_level_try_or_with_block_is_refused_as_it_runs_on_import_too():
    for block in (
        "try:\n    run = train()\nfinally:\n    pass\n",
        "with open('x') as f:\n    run = train()\n",
    ):
        assert _verdict(block) is False, block


def test_a_call_in_a_function_is_judged_by_where_the_function_is_called():
    # the frame that starts at the module's top level is the call of main(), not train()'s line
    source = "def main():\n    pass\n\n\nmain()  # train(\n"
    assert _verdict(source) is False
    guarded = "def main():\n    pass\n\n\nif __name__ == '__main__':\n    main()  # train(\n"
    assert _verdict(guarded)


def test_standard_inputs_main_file_is_hidden_while_a_child_starts_and_restored_after(monkeypatch):
    main = sys.modules["__main__"]
    monkeypatch.setattr(main, "__file__", "<stdin>", raising=False)  # what `python -` sets
    monkeypatch.setattr(main, "__spec__", None, raising=False)
    with children_skip_an_unreadable_main():
        assert not hasattr(main, "__file__")
    assert main.__file__ == "<stdin>"


def test_a_readable_main_file_is_left_alone(monkeypatch, tmp_path):
    script = tmp_path / "script.py"
    script.write_text("pass\n")
    main = sys.modules["__main__"]
    monkeypatch.setattr(main, "__file__", str(script), raising=False)
    monkeypatch.setattr(main, "__spec__", None, raising=False)
    with children_skip_an_unreadable_main():
        assert main.__file__ == str(script)
