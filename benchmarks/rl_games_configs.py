"""Tries to translate every YAML file rl_games' wheel ships (`rl_games/configs/**.yaml`) with this
surge build, and prints a markdown table: file, result (runs here / waits for a flag of issue 21 /
refused / not a training file), surge env or the refused key, and why. docs/rl_games.md holds its
output; regenerate it after a flag of issue 21 is merged:

    PYTHONPATH=$PWD python benchmarks/rl_games_configs.py --write docs/rl_games.md
    PYTHONPATH=$PWD python benchmarks/rl_games_configs.py --check docs/rl_games.md   # CI: exit 1 when stale

(without either, the table is printed). The table is the end of the page, from its "N files: ..."
line on.

Only the translation is tried (no env is made, nothing is trained): "translates" means every key
is mapped; whether the env itself can be made here is checked by `surge train`. A file with
`mixed_precision: True` translates to bf16 on a CUDA machine and to float32 elsewhere, as rl_games
1.6.5 runs it (its autocast is CUDA's), so the table is the same on both.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path


def classify(path: Path) -> tuple[str, str, str]:
    """(result, env or the refused key, why) for one shipped file: "translates", "waits for issue
    21" (every key maps, some to flags of issue 21 not merged here: named), "refused" (the first
    key surge cannot honour), or "not a training file"."""
    # the algorithms' sections (APPO's bounds_loss_coef ...) are flags once registered: the CLI
    # and the tests import the built-ins first, and so does this script run alone
    import surge.app.builtins  # noqa: F401
    from surge.app.rl_games.envs import RlGamesKeyError
    from surge.app.rl_games.translation import is_rl_games_yaml, translate
    from surge.cfg.yaml_files import read_yaml
    from surge.errors import ConfigError

    try:
        data = read_yaml(str(path))
    except ConfigError as e:
        return "not a training file", "", e.problem
    if not is_rl_games_yaml(data):
        return (
            "not a training file",
            "",
            "no params: algo/model/network/config (an env config read by another file)",
        )
    try:
        out = translate(data, path.name, collect_missing=True)
    except RlGamesKeyError as e:
        why = re.sub(r" \(in [^)]*\)$", "", e.problem.rstrip("."))
        if e.fix:  # what to do instead, e.g. the surge command that trains the task
            why = f"{why.rstrip('.')}. Fix: {e.fix}"
        return "refused", f"`{e.field}`", why
    if out.missing:
        flags = ", ".join(f"`{k.split('.')[-1]}` ({flag})" for k, flag in out.missing)
        return "waits for issue 21", f"`{out.values['env']}`", f"needs {flags}"
    return "translates", f"`{out.values['env']}`", ""


def render(root: Path) -> str:
    """The summary line and the markdown table of every `*.yaml` under `root`."""
    rows = [(str(f.relative_to(root)), *classify(f)) for f in sorted(root.rglob("*.yaml"))]
    counts = Counter(r[1] for r in rows)
    lines = [f"{len(rows)} files: " + ", ".join(f"{n} {k}" for k, n in counts.most_common()) + ".", ""]
    lines += ["| file | result | surge env / refused key | why |", "|---|---|---|---|"]
    for name, result, what, why in rows:
        lines.append(f"| {name} | {result} | {what} | {why.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


#: the first line of the generated part of docs/rl_games.md
SUMMARY = re.compile(r"^\d+ files: ", re.M)


def split_doc(text: str) -> tuple[str, str]:
    """(the page before the generated table, the table from its summary line on).

    Raises:
        ValueError: the page has no "N files: ..." line.
    """
    m = SUMMARY.search(text)
    if m is None:
        raise ValueError('no "N files: ..." line: the page has no generated table')
    return text[: m.start()], text[m.start() :]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default="", help="rl_games' configs folder (default: the installed wheel's)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", metavar="DOC", help="exit 1 when DOC's table is not this build's")
    mode.add_argument("--write", metavar="DOC", help="replace DOC's table with this build's")
    args = p.parse_args(argv)
    if args.configs:
        root = Path(args.configs)
    else:
        import rl_games

        root = Path(rl_games.__file__).parent / "configs"
    table = render(root)
    if not (args.check or args.write):
        print(table, end="")
        return 0
    doc = Path(args.check or args.write)
    head, old = split_doc(doc.read_text(encoding="utf-8"))
    if args.write:
        doc.write_text(head + table, encoding="utf-8")
        return 0
    if old == table:
        return 0
    import difflib

    sys.stdout.writelines(
        difflib.unified_diff(old.splitlines(True), table.splitlines(True), str(doc), "this build")
    )
    print(f"{doc}'s table is stale: run python benchmarks/rl_games_configs.py --write {doc}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
