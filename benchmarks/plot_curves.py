"""Plots the training curves that the side-by-side scripts print (`dqn_atari_vs_sb3.py`: lines
`seed S NAME curve (env frames, training return): [[frames, return], ...]`) from their saved
outputs into one PNG, a line per seed and side.

    python benchmarks/plot_curves.py surge.out sb3.out --png docs/dqn_atari_breakout_2m.png \
        --title "Breakout, DQN, 2M env frames"
"""

from __future__ import annotations

import argparse
import ast
import re
import sys

LINE = re.compile(r"^seed (\d+) (\S+)\s+curve \(env frames, training return\): (\[.*\])$")


def read_curves(paths: list[str]) -> dict[str, list[tuple[int, float]]]:
    """{"NAME seed S": [(env frames, return), ...]} from every curve line of the files."""
    curves: dict[str, list[tuple[int, float]]] = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                m = LINE.match(line.strip())
                if m:
                    curves[f"{m.group(2)} seed {m.group(1)}"] = [
                        tuple(p) for p in ast.literal_eval(m.group(3))
                    ]
    return curves


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outputs", nargs="+", help="saved outputs of a side-by-side script")
    ap.add_argument("--png", required=True, help="where to write the plot")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    curves = read_curves(a.outputs)
    if not curves:
        print("no curve line in " + ", ".join(a.outputs), file=sys.stderr)
        return 1
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, points in sorted(curves.items()):
        ax.plot([p[0] / 1e6 for p in points], [p[1] for p in points], marker="o", label=name)
    ax.set_xlabel("env frames (millions)")
    ax.set_ylabel("training return, last 100 games")
    ax.set_title(a.title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.png, dpi=100)
    for name, points in sorted(curves.items()):
        print(name, points)
    return 0


if __name__ == "__main__":
    sys.exit(main())
