"""Draws a self-play run's win rate and Elo curves from `<experiment>/self_play/history.jsonl`.

    python benchmarks/plot_self_play.py --train_dir=train_dir --experiment=c4_self_play \
        --out=docs/self_play_connect_four.png

Top: policy 0's win rate (draws half) over its latest `--self_play_games_to_check` games against
the pool, and the env frames at which a snapshot joined (dotted lines). Bottom: the Elo ratings of
policy 0 and of each snapshot from the frame it joined.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train_dir", required=True)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="")
    args = ap.parse_args(argv)
    folder = Path(args.train_dir) / args.experiment / "self_play"
    points = [json.loads(line) for line in (folder / "history.jsonl").read_text().splitlines()]
    pool = json.loads((folder / "pool.json").read_text())
    frames = [p["env_frames"] / 1e3 for p in points]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    top.plot(
        frames, [p["win_rate"] for p in points], color="tab:blue", label="policy 0's win rate vs the pool"
    )
    for s in pool["snapshots"][1:]:
        top.axvline(s["env_frames"] / 1e3, color="grey", linestyle=":", linewidth=0.8)
    top.axhline(0.5, color="black", linewidth=0.5)
    top.set_ylim(0, 1)
    top.set_ylabel("win rate (draws 1/2)")
    top.legend(loc="lower right")
    top.set_title(args.title or f"self-play: {args.experiment} (dotted: a snapshot joins the pool)")
    bottom.plot(frames, [p["elo_policy_0"] for p in points], color="tab:red", linewidth=2, label="policy 0")
    ids = sorted({int(i) for p in points for i in p["elo_snapshots"]})
    cmap = plt.get_cmap("viridis")
    for k, sid in enumerate(ids):
        xs = [f for f, p in zip(frames, points, strict=True) if str(sid) in p["elo_snapshots"]]
        ys = [p["elo_snapshots"][str(sid)] for p in points if str(sid) in p["elo_snapshots"]]
        bottom.plot(xs, ys, color=cmap(k / max(1, len(ids) - 1)), linewidth=0.8, label=f"snapshot {sid}")
    bottom.set_ylabel("Elo (K = 32, start 1000)")
    bottom.set_xlabel("env frames (thousands)")
    if len(ids) <= 12:
        bottom.legend(loc="upper left", fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
