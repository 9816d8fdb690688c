"""Draws a population's evaluation curves, one line per policy, with its PBT updates marked:
`eval/<stat>_mean` (`--eval_stat`) from the run's TensorBoard summaries and the `replace` and
`mutate` records of `pbt_log.jsonl`.

    python benchmarks/plot_population.py /work/runs/duel_pbt --stat FRAGCOUNT \
        --png docs/doom_duel_pbt_frags_vs_bots.png --title "doom_duel, 2 policies, PBT"

Top: each policy's mean `--eval_stat` over the evaluation's episodes (`--eval_env`'s opponents:
doom_duel_bots is the built-in bot), by env frames of the whole run. Bottom: its mean eval return.
A solid vertical line marks a policy replaced by another (PBT's exploit), a dotted one a mutation
only. Prints the points it drew.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def pbt_events(folder: Path) -> list[dict]:
    """The `replace` and `mutate` records of the run's `pbt_log.jsonl` (empty without one)."""
    path = folder / "pbt_log.jsonl"
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("event") in ("replace", "mutate")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="the experiment folder")
    ap.add_argument("--stat", required=True, help="the run's --eval_stat, e.g. FRAGCOUNT")
    ap.add_argument("--png", required=True)
    ap.add_argument("--title", default="")
    a = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from surge.experiment.events import read_scalars

    scalars = read_scalars(a.folder)
    tags = (f"eval/{a.stat}_mean", "eval/return_mean")
    fig, axes = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    colors = plt.get_cmap("tab10")
    drawn = 0
    for pid, series in sorted(scalars.items()):
        for ax, tag in zip(axes, tags, strict=True):
            s = series.get(tag)
            if s is None or not len(s):
                continue
            ax.plot(s.env_frames / 1e6, s.values, marker="o", color=colors(pid), label=f"policy {pid}")
            print(
                f"policy {pid} {tag}: {[(int(f), round(float(v), 2)) for f, v in zip(s.env_frames, s.values, strict=True)]}"
            )
            drawn += 1
    for r in pbt_events(a.folder):
        style = "-" if r["event"] == "replace" else ":"
        for ax in axes:
            ax.axvline(r["env_frames"] / 1e6, color=colors(r["policy"]), linestyle=style, linewidth=0.8)
        print(
            f"PBT {r['event']} at {r['env_frames']}: policy {r['policy']} <- {r['source']}, objectives {r['objectives']}"
        )
    if not drawn:
        print(f"no {tags[0]} or {tags[1]} in {a.folder}/summaries", file=sys.stderr)
        return 1
    axes[0].set_ylabel(f"{a.stat} per episode (eval)")
    axes[1].set_ylabel("return per episode (eval)")
    axes[1].set_xlabel("env frames of the run (millions)")
    axes[0].legend(loc="upper left")
    axes[0].set_title(a.title or f"{a.folder.name}: evaluation (solid: PBT replaced, dotted: mutated)")
    fig.tight_layout()
    fig.savefig(a.png, dpi=100)
    print(f"wrote {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
