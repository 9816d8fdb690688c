"""Training curves from the run folders `compare_sample_factory.py --keep DIR` leaves, as the curve
lines `plot_curves.py` reads: `seed S NAME curve (env frames, training return): [[frames, return], ...]`.

    python benchmarks/curves_from_logs.py /tmp/battle_runs/*round1 > /tmp/battle.curves
    python benchmarks/plot_curves.py /tmp/battle.curves --png docs/doom_battle_5m.png --title "..."

A surge folder has `surge_console.txt.err` (its log: `Total env frames` and `Episode return` of each
progress line); a Sample Factory folder has `sf/sf_log.txt` (`Total num frames` of each `Fps is`
line and the `Avg episode reward` of policy 0 that follows it, times `--sf_return_scale`). NAME is
the folder's name; S is 1 unless the name ends in `roundN` (then N, as with `--seed-per-round`).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import SF_LINE, SF_RETURN, SURGE_LINE, SURGE_RETURN, _float  # noqa: E402


def surge_curve(log: Path) -> list[tuple[int, float]]:
    """(env frames, return) of each progress line of a surge log that reports a return."""
    points = []
    for line in log.read_text(errors="replace").splitlines():
        if (m := SURGE_LINE.match(line)) and (r := SURGE_RETURN.search(line)):
            points.append((int(m.group(2)), _float(r.group(1))))
    return points


def sf_curve(log: Path, scale: float = 1.0) -> list[tuple[int, float]]:
    """(env frames, return x scale) of a Sample Factory log: each `Avg episode reward` with the
    frames of the `Fps is` line before it."""
    points, frames = [], None
    for line in log.read_text(errors="replace").splitlines():
        if m := SF_LINE.match(line):
            frames = int(m.group(2))
        elif (r := SF_RETURN.match(line)) and frames is not None:
            points.append((frames, _float(r.group(1)) * scale))
    return points


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dirs", type=Path, nargs="+")
    ap.add_argument("--every", type=int, default=1, help="keep every N-th point (and the last)")
    ap.add_argument("--sf_return_scale", type=float, default=1.0, help="configs.py's sf_return_scale")
    a = ap.parse_args(argv)
    for d in a.run_dirs:
        seed = int(m.group(1)) if (m := re.search(r"round(\d+)$", d.name)) else 1
        if (d / "surge_console.txt.err").exists():
            points = surge_curve(d / "surge_console.txt.err")
        elif (d / "sf" / "sf_log.txt").exists():
            points = sf_curve(d / "sf" / "sf_log.txt", a.sf_return_scale)
        else:
            print(f"{d}: neither a surge nor a Sample Factory run folder", file=sys.stderr)
            return 2
        points = points[:: a.every] + (points[-1:] if (len(points) - 1) % a.every else [])
        print(f"seed {seed} {d.name} curve (env frames, training return): {[list(p) for p in points]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
