"""Plot `episode/return_mean` against env frames from an experiment's TensorBoard summaries.

python benchmarks/plot_learning_curve.py train_dir/breakout docs/breakout_curve.png --title "..."
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def read_scalars(summary_dir: Path, tag: str) -> list[tuple[int, float]]:
    """(step, value) of `tag` from every event file under `summary_dir`, sorted by step."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    points: dict[int, float] = {}
    for f in sorted(summary_dir.rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(f), size_guidance={"scalars": 0})
        acc.Reload()
        if tag in acc.Tags().get("scalars", []):
            points.update({e.step: e.value for e in acc.Scalars(tag)})
    return sorted(points.items())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("experiment_dir", type=Path)
    p.add_argument("out_png", type=Path)
    p.add_argument("--tag", default="episode/return_mean")
    p.add_argument("--title", default="")
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = read_scalars(args.experiment_dir / "summaries", args.tag)
    if not pts:
        print(f"no {args.tag} in {args.experiment_dir}", file=sys.stderr)
        return 1
    x, y = zip(*pts, strict=True)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([v / 1e6 for v in x], y)
    ax.set_xlabel("env frames (millions)")
    ax.set_ylabel(f"{args.tag} (last 100 episodes)")
    ax.set_title(args.title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    args.out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out_png, dpi=100)
    print(f"wrote {args.out_png}: {len(pts)} points, last {y[-1]:.2f} at {x[-1]} frames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
