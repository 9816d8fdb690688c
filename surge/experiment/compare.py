"""`surge report DIR...`: several runs in one figure and one table; seeds as mean ± std.

    surge report train_dir/sweep --out=sweep_report
    surge report train_dir/lr_* --x=seconds --group_by=learning_rate

A DIR is an experiment folder (it holds `cfg.json`) or a folder with experiment folders below it
(a sweep). Runs whose cfg.json differ only in `seed` (and in their names and folders) form one
group (`--group_by=seed`, the default); `--group_by=none` keeps every run apart;
`--group_by=FLAG[,FLAG]` groups by those flags' values. A group of several runs is drawn as its
mean, shaded ± its standard deviation (numpy's `np.std`, ddof=0) over the runs, on the x values
that all its runs reached (each run interpolated linearly there); the table gives the same mean ±
std of each run's final values. Policy 0's curves are drawn. Writes `OUT/report.md` and
`OUT/curves.png` and prints the table.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from surge.errors import ConfigError
from surge.experiment.curves import (
    COMPARE_PANELS,
    new_figure,
    require_matplotlib,
    save_figure,
    seconds_unit,
    style_axes,
)
from surge.experiment.events import RunScalars, read_scalars
from surge.experiment.report import fmt, fmt_seconds, read_cfg, run_totals, write_atomic

#: flags that differ between the runs of one group without making them different experiments
NOT_A_SETTING = frozenset(
    {
        "seed",
        "experiment",
        "train_dir",
        "git_hash",
        "git_repo_name",
        "wandb_user",
        "wandb_project",
        "wandb_group",
        "wandb_job_type",
        "wandb_tags",
        "with_wandb",
        # when to save and report: not how the run learns
        "save_every_sec",
        "keep_checkpoints",
        "save_milestones_sec",
        "save_best_every_sec",
        "save_best_after",
        "save_best_metric",
        "experiment_summaries_interval",
        "report_interval_sec",
        "write_report",
        "progress_bar",
    }
)


@dataclasses.dataclass
class Run:
    """One experiment folder: its `cfg` (cfg.json) and policy 0's scalars (`RunScalars`)."""

    folder: Path
    cfg: dict[str, Any]
    scalars: RunScalars

    @property
    def name(self) -> str:
        return str(self.cfg.get("experiment") or self.folder.name)


#: the longest label of a group in the figure's legend and the table (characters)
LABEL_MAX = 48


@dataclasses.dataclass
class Group:
    """Runs drawn as one curve: `settings` names the settings they share (those that differ
    between groups), `label` is the group's short name (`_label`)."""

    key: tuple
    runs: list[Run]
    label: str = ""
    settings: str = ""


@dataclasses.dataclass
class Curve:
    """A group's curve of one tag: x [N], mean [N] and std [N] over its `n` runs (float64)."""

    x: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    n: int


def find_runs(dirs: Sequence[Path | str]) -> list[Run]:
    """The experiment folders named in `dirs` or found below them (a folder holding a cfg.json),
    each read once, sorted by path; duplicates once.

    Raises:
        ConfigError: a DIR does not exist, or no experiment folder is found.
    """
    folders: list[Path] = []
    for d in map(Path, dirs):
        if not d.exists():
            raise ConfigError(
                "DIR",
                f"{d} does not exist.",
                "pass experiment folders (train_dir/EXPERIMENT) or a sweep's folder.",
            )
        found = [d] if (d / "cfg.json").is_file() else sorted(p.parent for p in d.rglob("cfg.json"))
        folders += [f for f in found if f.resolve() not in {g.resolve() for g in folders}]
    if not folders:
        raise ConfigError(
            "DIR",
            f"no experiment folder (a folder with cfg.json) in {', '.join(map(str, dirs))}.",
            "pass experiment folders (train_dir/EXPERIMENT) or a folder above them.",
        )
    return [Run(f, read_cfg(f), read_scalars(f)) for f in sorted(folders)]


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def group_runs(runs: list[Run], group_by: str = "seed") -> list[Group]:
    """The runs' groups, in the order of their first run (see the module doc for `group_by`).

    Raises:
        ConfigError: `group_by` names a flag that none of the runs' cfg.json has.
    """
    keys: list[tuple]
    if group_by == "none":
        keys = [(r.name,) for r in runs]
    elif group_by == "seed":
        keys = [
            tuple(sorted((k, _hashable(v)) for k, v in r.cfg.items() if k not in NOT_A_SETTING)) for r in runs
        ]
    else:
        flags = [f.strip() for f in group_by.split(",") if f.strip()]
        unknown = [f for f in flags if not any(f in r.cfg for r in runs)]
        if unknown or not flags:
            raise ConfigError(
                "group_by",
                f"{', '.join(unknown) or repr(group_by)} is not a flag of these runs' cfg.json.",
                "pass seed (the default: runs that differ only in seed), none, or flag names, e.g. "
                "--group_by=learning_rate,num_workers.",
            )
        keys = [tuple((f, _hashable(r.cfg.get(f))) for f in flags) for r in runs]
    groups: dict[tuple, Group] = {}
    for key, run in zip(keys, runs, strict=True):
        groups.setdefault(key, Group(key, [])).runs.append(run)
    out = list(groups.values())
    _label(out, group_by)
    return out


def _label(groups: list[Group], group_by: str) -> None:
    """Each group's `settings` (the settings whose values differ between the groups: k=v, ...) and
    `label`, its name in the figure's legend and the table: the settings when they fit in
    `LABEL_MAX` characters; else the name its runs share (their experiment names' common start,
    e.g. `lr_0.001` of `lr_0.001_seed_1` and `lr_0.001_seed_2`) when the groups' names differ;
    else `group N`. Two runs of different envs differ in tens of derived settings (hundreds of
    characters), which a legend cannot show."""
    if group_by == "none":
        for g in groups:
            g.label = g.settings = g.runs[0].name
        return
    dicts = [dict(g.key) for g in groups]
    keys = sorted({k for d in dicts for k in d})
    differing = [k for k in keys if len({repr(d.get(k)) for d in dicts}) > 1]
    for g, d in zip(groups, dicts, strict=True):
        parts = [f"{k}={d.get(k)}" for k in differing]
        g.settings = ", ".join(parts) if parts else str(g.runs[0].cfg.get("env", "runs"))
    if all(len(g.settings) <= LABEL_MAX for g in groups):
        for g in groups:
            g.label = g.settings
        return
    names = [_shared_name([r.name for r in g.runs]) for g in groups]
    unique = all(names) and len(set(names)) == len(names)
    for i, g in enumerate(groups):
        name = names[i] if unique else f"group {i + 1}"
        g.label = name if len(name) <= LABEL_MAX else name[: LABEL_MAX - 1] + "…"


def _shared_name(names: list[str]) -> str:
    """The start the experiment `names` share, without a trailing seed part or separator
    (`lr_0.001_seed_1`, `lr_0.001_seed_2` -> `lr_0.001`); the name itself for one run."""
    prefix = os.path.commonprefix(names)
    if len(names) > 1:
        prefix = re.sub(r"([_\-. =]*seed)?[_\-. =]*$", "", prefix, flags=re.IGNORECASE)
    return prefix


def group_curve(group: Group, tag: str, x_axis: str = "env_frames", max_points: int = 500) -> Curve | None:
    """The mean and std over the group's runs of policy 0's `tag` against `x_axis` ("env_frames"
    or "seconds"), on the x values of its runs (their union, thinned to `max_points`) within the
    range all of them reached; each run interpolated linearly (`np.interp`) there. None when a run
    of the group lacks the tag."""
    series = [r.scalars.get(0, {}).get(tag) for r in group.runs]
    if any(s is None or not len(s) for s in series):
        return None
    xs = [np.asarray(s.x(x_axis), dtype=np.float64) for s in series if s is not None]
    vs = [s.values for s in series if s is not None]
    lo, hi = max(x[0] for x in xs), min(x[-1] for x in xs)
    grid = np.unique(np.concatenate(xs))
    grid = grid[(grid >= lo) & (grid <= hi)]
    if len(grid) > max_points:
        grid = grid[np.linspace(0, len(grid) - 1, max_points).round().astype(int)]
    at = np.stack([np.interp(grid, x, v) for x, v in zip(xs, vs, strict=True)])  # [runs, N]
    return Curve(grid, at.mean(axis=0), at.std(axis=0), len(series))


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """(mean, std) of the finite values (numpy's, ddof=0); nan, nan when none is finite."""
    v = np.asarray([x for x in values if math.isfinite(x)], dtype=np.float64)
    return (float(v.mean()), float(v.std())) if v.size else (float("nan"), float("nan"))


def group_table(groups: list[Group]) -> list[str]:
    """The markdown table: per group its runs, and the mean ± std over them of env frames,
    training time, env frames / s, final and best return (and eval return when recorded)."""
    totals = [[run_totals(r.scalars) for r in g.runs] for g in groups]
    with_eval = any(math.isfinite(t["final_eval_return"]) for ts in totals for t in ts)
    cols = ["env frames", "training time", "env frames / s", "final return", "best return"]
    keys = ["env_frames", "seconds", "env_frames_per_sec", "final_return", "best_return"]
    if with_eval:
        cols += ["final eval return", "best eval return"]
        keys += ["final_eval_return", "best_eval_return"]
    rows = [
        "| group | runs | " + " | ".join(cols) + " |",
        "| --- | --- | " + " | ".join("---" for _ in cols) + " |",
    ]
    for g, ts in zip(groups, totals, strict=True):
        cells = []
        for k in keys:
            m, s = mean_std([t[k] for t in ts])
            f = fmt_seconds if k == "seconds" else fmt
            cells.append(f(m) if len(ts) == 1 or not math.isfinite(s) else f"{f(m)} ± {f(s)}")
        seeds = ", ".join(str(r.cfg.get("seed")) for r in g.runs)
        rows.append(f"| {g.label} | {len(g.runs)} (seeds {seeds}) | " + " | ".join(cells) + " |")
    return rows


def plot_groups(groups: list[Group], path: Path, x_axis: str, title: str) -> int:
    """Draws `COMPARE_PANELS` (those with data) into `path` (PNG): each group's mean line, shaded ±
    std. Returns the panels drawn (0: none, nothing written)."""
    fig, panels = draw_groups(groups, x_axis, title)
    if fig is not None:
        save_figure(fig, path)
    return panels


def draw_groups(groups: list[Group], x_axis: str, title: str) -> tuple[Any, int]:
    """The figure of `plot_groups` and its number of panels; (None, 0) when no panel has data.
    The x axis starts at 0 (env frames or seconds): the run's start, before its first summary,
    is on the figure. The legend below the panels is laid out in as many columns as fit the
    figure's width."""
    tags = {t for g in groups for r in g.runs for t in r.scalars.get(0, {})}
    present = [(p, p.present(sorted(tags))) for p in COMPARE_PANELS]
    panels = [(p, t[0]) for p, t in present if t]
    if not panels:
        return None, 0
    curves = {(i, tag): group_curve(g, tag, x_axis) for i, g in enumerate(groups) for _, tag in panels}
    scale, x_label = 1.0, "env frames"
    if x_axis == "seconds":
        top = max((float(c.x[-1]) for c in curves.values() if c is not None and len(c.x)), default=0.0)
        scale, x_label = seconds_unit(top)
    fig, axes = new_figure(len(panels), title)
    for ax, (panel, tag) in zip(axes, panels, strict=True):
        for i, g in enumerate(groups):
            c = curves[(i, tag)]
            if c is None or not len(c.x):
                continue
            x = c.x / scale
            label = g.label + (f" ({c.n} runs, mean ± std)" if c.n > 1 else "")
            (line,) = ax.plot(x, c.mean, lw=1.6, label=label, color=f"C{i % 10}")
            if c.n > 1:
                ax.fill_between(x, c.mean - c.std, c.mean + c.std, color=line.get_color(), alpha=0.2, lw=0)
        style_axes(ax, panel, x_axis, x_label)
        ax.set_xlim(left=0)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        _legend_below(fig, handles, labels)
    return fig, len(panels)


def _legend_below(fig: Any, handles: list, labels: list[str]) -> None:
    """The legend centred below the panels: at most 3 columns, fewer when a row would be wider
    than the figure; the panels' bottom margin grows by the legend's height."""
    bottom = fig.subplotpars.bottom
    renderer = fig.canvas.get_renderer()
    for ncol in range(min(3, len(labels)), 0, -1):
        legend = fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=9, frameon=False)
        box = legend.get_window_extent(renderer)
        if box.width <= fig.bbox.width * 0.98 or ncol == 1:
            break
        legend.remove()
    fig.subplots_adjust(bottom=bottom + box.height / fig.bbox.height)


def write_comparison(
    runs: list[Run], out: Path, x_axis: str = "env_frames", group_by: str = "seed"
) -> list[Group]:
    """Writes `out/curves.png` and `out/report.md` (table, figure, the runs of each group); returns
    the groups."""
    groups = group_runs(runs, group_by)
    out.mkdir(parents=True, exist_ok=True)
    envs = sorted({str(r.cfg.get("env", "?")) for r in runs})
    algos = sorted({str(r.cfg.get("algo", "?")) for r in runs})
    title = f"{', '.join(algos)} on {', '.join(envs)}: {len(runs)} runs in {len(groups)} group(s)"
    panels = plot_groups(groups, out / "curves.png", x_axis, title)
    lines = [
        f"# {title}",
        "",
        "Mean ± standard deviation (numpy, ddof=0) over the runs of each group; returns are the mean of "
        "each run's last `stats_avg` episodes (policy 0).",
        "",
        *group_table(groups),
        "",
        "![curves](curves.png)" if panels else "No TensorBoard summaries to draw.",
        "",
        "## Runs",
        "",
    ]
    for g in groups:
        settings = f" ({g.settings})" if g.settings != g.label else ""
        lines.append(f"- {g.label}{settings}: " + ", ".join(f"`{r.folder}`" for r in g.runs))
    write_atomic(out / "report.md", "\n".join(lines) + "\n")
    return groups


def main(argv: list[str] | None = None) -> int:
    """`surge report DIR... [--out=DIR] [--x=env_frames|seconds] [--group_by=seed|none|FLAG,...]`.

    Raises:
        ConfigError: no experiment folder found, a bad `--group_by`, matplotlib missing.
    """
    p = argparse.ArgumentParser(
        prog="surge report", description="Several runs in one figure and table; seeds as mean ± std."
    )
    p.add_argument("dirs", nargs="+", type=Path, help="experiment folders, or folders above them (a sweep)")
    p.add_argument(
        "--out", type=Path, default=Path("surge_report"), help="folder for report.md and curves.png"
    )
    p.add_argument(
        "--x", choices=("env_frames", "seconds"), default="env_frames", help="x axis of the curves"
    )
    p.add_argument(
        "--group_by",
        default="seed",
        help="seed: runs that differ only in seed are one group (default); none: every run apart; "
        "FLAG[,FLAG]: group by these flags' values",
    )
    args = p.parse_args(argv)
    require_matplotlib("report")
    runs = find_runs(args.dirs)
    groups = write_comparison(runs, args.out, args.x, args.group_by)
    print((args.out / "report.md").read_text())
    print(
        f"wrote {args.out / 'report.md'} and {args.out / 'curves.png'}: {len(runs)} runs in {len(groups)} group(s)"
    )
    return 0
