"""Tries to translate every YAML file rl_games' wheel ships (`rl_games/configs/**.yaml`) with this
surge build, and prints a markdown table: file, result (runs here / waits for a flag of issue 21 /
refused / not a training file), surge env or the refused key, and why. docs/rl_games.md holds its
output; regenerate it after a flag of issue 21 is merged:

    PYTHONPATH=$PWD python benchmarks/rl_games_configs.py > /tmp/table.md

Only the translation is tried (no env is made, nothing is trained): "translates" means every key
is mapped; whether the env itself can be made here is checked by `surge train`. A file that asks
for fp16 (`mixed_precision: True`) is counted apart, "translates, CUDA only": `surge train`
refuses fp16 on a CPU before the start.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path


def classify(path: Path) -> tuple[str, str, str]:
    """(result, env or the refused key, why) for one shipped file: "translates", "translates, CUDA
    only" (fp16), "waits for issue 21" (every key maps, some to flags of issue 21 not merged here:
    named), "refused" (the first key surge cannot honour), or "not a training file"."""
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
    if out.values.get("mixed_precision") == "fp16":
        return (
            "translates, CUDA only",
            f"`{out.values['env']}`",
            "mixed_precision: True is fp16, which surge runs on a CUDA GPU only (elsewhere add "
            "--mixed_precision=bf16 or none)",
        )
    return "translates", f"`{out.values['env']}`", ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default="", help="rl_games' configs folder (default: the installed wheel's)")
    args = p.parse_args(argv)
    if args.configs:
        root = Path(args.configs)
    else:
        import rl_games

        root = Path(rl_games.__file__).parent / "configs"
    rows = [(str(f.relative_to(root)), *classify(f)) for f in sorted(root.rglob("*.yaml"))]
    counts = Counter(r[1] for r in rows)
    print(f"{len(rows)} files: " + ", ".join(f"{n} {k}" for k, n in counts.most_common()) + ".\n")
    print("| file | result | surge env / refused key | why |")
    print("|---|---|---|---|")
    for name, result, what, why in rows:
        print(f"| {name} | {result} | {what} | {why.replace('|', '/')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
