"""Learning-curve figures of one run (`curves.png` of its report) and of several (`surge report`).

Drawn with matplotlib's object API (no pyplot: safe in the report's background thread), saved
atomically (a temp file, then a rename). matplotlib is the `report` extra
(`pip install 'surge-rl[report]'`); `require_matplotlib` says so when it is missing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from surge.errors import ConfigError
from surge.experiment.events import RunScalars, Series

PIP_HINT = "pip install 'surge-rl[report]' (or pip install matplotlib)"


@dataclasses.dataclass(frozen=True)
class Panel:
    """One axes of a figure: its title, y label and the tags it draws (those present).

    `band`: tag -> (low tag, high tag) or (std tag,) drawn shaded around the tag's line.
    `prefix`: also draws every tag under this prefix (not in `exclude`), e.g. all `losses/`.
    """

    title: str
    ylabel: str
    tags: tuple[str, ...] = ()
    prefix: str = ""
    exclude: tuple[str, ...] = ()
    band: tuple[tuple[str, tuple[str, ...]], ...] = ()
    symlog: bool = False

    def present(self, tags: Sequence[str]) -> list[str]:
        """The tags of this panel among `tags`, in the panel's order (then the prefix's, sorted)."""
        out = [t for t in self.tags if t in tags]
        if self.prefix:
            out += sorted(
                t for t in tags if t.startswith(self.prefix) and t not in self.exclude and t not in out
            )
        return out


#: the panels of a run's curves.png (docs/metrics.md has the tags and their units)
PANELS: tuple[Panel, ...] = (
    Panel(
        "Episode return",
        "return (env reward)",
        ("episode/return_mean", "eval/return_mean"),
        band=(("eval/return_mean", ("eval/return_std",)),),
    ),
    Panel("Episode length", "length (env steps)", ("episode/length_mean", "eval/length_mean")),
    Panel("Throughput", "env frames / s (last 10 s)", ("perf/env_frames_per_sec",)),
    Panel(
        "Losses",
        "loss",
        ("losses/total",),
        prefix="losses/",
        exclude=("losses/grad_norm", "losses/central_value_grad_norm"),
        symlog=True,
    ),
    Panel(
        "Policy lag",
        "policy versions (avg, min-max shaded)",
        ("train/policy_lag_avg",),
        band=(("train/policy_lag_avg", ("train/policy_lag_min", "train/policy_lag_max")),),
    ),
    Panel("Entropy", "entropy (nats)", ("policy/entropy", "train/entropy")),
)

#: the panels of `surge report` (several runs): one tag each, the first present
COMPARE_PANELS: tuple[Panel, ...] = (
    Panel("Episode return", "return (env reward)", ("episode/return_mean",)),
    Panel("Evaluation return", "return (env reward)", ("eval/return_mean",)),
    Panel("Episode length", "length (env steps)", ("episode/length_mean",)),
    Panel("Throughput", "env frames / s (last 10 s)", ("perf/env_frames_per_sec",)),
    Panel("Total loss", "loss", ("losses/total", "losses/td_loss"), symlog=True),
    Panel("Policy lag", "policy versions (avg)", ("train/policy_lag_avg",)),
)


def require_matplotlib(field: str = "write_report") -> Any:
    """matplotlib (`field`: the flag or command named in the error). The process's backend is left
    as it is: the figures are drawn on their own Agg canvas (`new_figure`), never through pyplot.

    Raises:
        ConfigError: matplotlib is not installed (the message has the pip command).
    """
    try:
        import matplotlib
    except ImportError as e:
        raise ConfigError(
            field, "drawing curves needs matplotlib, which is not installed.", PIP_HINT + "."
        ) from e
    return matplotlib


def seconds_unit(max_seconds: float) -> tuple[float, str]:
    """(divisor, label) of a time axis whose largest value is `max_seconds`: s, min or h."""
    if max_seconds >= 3 * 3600:
        return 3600.0, "training time (hours)"
    if max_seconds >= 180:
        return 60.0, "training time (minutes)"
    return 1.0, "training time (seconds)"


def new_figure(n_panels: int, title: str) -> tuple[Any, list[Any]]:
    """A figure of `n_panels` axes on a grid of 2 or 3 columns, with its title."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = 2 if n_panels <= 4 else 3
    rows = max(1, -(-n_panels // cols))
    height = 3.6 * rows + 0.6
    fig = Figure(figsize=(5.2 * cols, height))
    FigureCanvasAgg(fig)
    # fixed margins (inches): matplotlib's constrained layout would be 40% of the drawing time
    fig.subplots_adjust(
        left=0.9 / (5.2 * cols),
        right=0.98,
        bottom=0.6 / height,
        top=1 - 0.75 / height,
        wspace=0.3,
        hspace=0.45,
    )
    axes = list(np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel())
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=12)
    return fig, axes[:n_panels]


def style_axes(ax: Any, panel: Panel, x_axis: str, x_label: str) -> None:
    """Title, labels, grid and an engineering-notation x axis (1M) for env frames."""
    from matplotlib.ticker import EngFormatter

    ax.set_title(panel.title, fontsize=11)
    ax.set_ylabel(panel.ylabel)
    ax.set_xlabel(x_label)
    if x_axis == "env_frames":
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    if panel.symlog and _spans_decades(ax):
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_ylabel(f"{panel.ylabel} (symlog scale)")
    ax.grid(alpha=0.3)


def _spans_decades(ax: Any, decades: float = 2.0) -> bool:
    """True when the lines of `ax` span more than `decades` orders of magnitude, or change sign
    with more than one (a log-like scale then shows them all; else a linear one is clearer)."""
    ys = [np.asarray(line.get_ydata(), dtype=np.float64) for line in ax.get_lines()]
    y = np.concatenate(ys) if ys else np.zeros(0)
    a = np.abs(y[np.isfinite(y) & (y != 0)])
    if not a.size:
        return False
    span = np.log10(a.max() / a.min())
    return bool(span > decades or (y.min() < 0 < y.max() and span > 1))


def save_figure(fig: Any, path: Path) -> None:
    """Writes `fig` as PNG to `path` atomically (temp file + rename: a reader never sees half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fig.savefig(tmp, format="png", dpi=100)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _label(tag: str, policy: int, n_policies: int) -> str:
    return tag if n_policies == 1 else f"policy {policy}: {tag}"


def plot_run(scalars: RunScalars, path: Path, title: str) -> int:
    """Draws one run's `PANELS` (those with data) against env frames, one line per policy and tag,
    into `path` (PNG). Returns the number of panels drawn (0: no data, nothing written)."""
    tags = sorted({t for per in scalars.values() for t in per})
    panels = [(p, p.present(tags)) for p in PANELS]
    panels = [(p, t) for p, t in panels if t]
    if not panels:
        return 0
    fig, axes = new_figure(len(panels), title)
    bands = {}
    for panel, _ in panels:
        bands.update(dict(panel.band))
    for ax, (panel, present) in zip(axes, panels, strict=True):
        lines = 0
        for pid, per in sorted(scalars.items()):
            for tag in present:
                s = per.get(tag)
                if s is None or not len(s):
                    continue
                x = s.env_frames
                (line,) = ax.plot(x, s.values, label=_label(tag, pid, len(scalars)), lw=1.5)
                lines += 1
                band = bands.get(tag)
                if band is not None and all(b in per for b in band):
                    lo, hi = _band(s, [per[b] for b in band])
                    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        style_axes(ax, panel, "env_frames", "env frames")
        ax.set_xlim(left=0)  # from the run's start: what came before its first summary shows as such
        if lines > 1:
            ax.legend(fontsize=8, loc="best")
    save_figure(fig, path)
    return len(panels)


def _band(s: Series, others: list[Series]) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) around `s` at its env frames: mean ± std with one other series (a std), else
    the two others (min, max); each interpolated at `s`'s env frames."""
    at = [
        np.interp(s.env_frames, o.env_frames, o.values) if len(o) else np.full(len(s), np.nan) for o in others
    ]
    if len(at) == 1:
        return s.values - at[0], s.values + at[0]
    return at[0], at[1]
