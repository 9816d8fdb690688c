"""`report.md` and `curves.png` of an experiment folder, written at every checkpoint and at the end.

The report is drawn from the folder alone: the scalars of its TensorBoard event files
(`surge.experiment.events`), its `cfg.json` (config, git revision) and `git_diff.patch`. During
training `RunReport` writes it in a background thread (the training loop never waits for it; a
checkpoint whose report would start while the previous one is still being written skips it), and
once more, waiting for it, at the end of the run. `--write_report=False` turns it off; a
`--no_writes` run writes nothing in its folder, so no report either.

TrainingRun's hooks are `update_report` (in `_save_all`) and `finish_report` (when `run` returns).
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from surge.errors import ConfigError
from surge.experiment.curves import plot_run
from surge.experiment.events import EventReader, RunScalars, Series

log = logging.getLogger("surge")

REPORT_FILE = "report.md"
CURVES_FILE = "curves.png"
GIT_DIFF_FILE = "git_diff.patch"

#: flags shown in the report's config summary (those the run's config has); cfg.json has them all
KEY_FLAGS = (
    "seed",
    "device",
    "serial_mode",
    "num_workers",
    "num_envs_per_worker",
    "worker_num_splits",
    "batched_sampling",
    "num_policies",
    "rollout",
    "recurrence",
    "batch_size",
    "num_batches_per_iteration",
    "ppo_epochs",
    "learning_rate",
    "lr_schedule",
    "gamma",
    "with_vtrace",
    "use_rnn",
    "encoder_mlp_layers",
    "normalize_input",
    "normalize_returns",
    "train_for_env_steps",
    "train_for_seconds",
    "with_pbt",
    "self_play",
)

_NO_BUDGET = int(1e10)

#: a checkpoint's report is skipped unless the time since the last one started is at least the CPU
#: time the last one took (its thread's) / MAX_SHARE: the report takes at most ~2% of one core,
#: however long the run
MAX_SHARE = 0.02


def fmt(v: Any) -> str:
    """A number as the report prints it: integers with thousands separators, floats with 4
    significant digits (thousands separated from 1000 on), nan as "-"."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    x = float(v)
    if not math.isfinite(x):
        return "-" if math.isnan(x) else str(x)
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 1000:
        return f"{x:,.1f}"
    return f"{x:.4g}"


def fmt_seconds(s: float) -> str:
    """Seconds as 45.2 s, 12 min 5 s, 3 h 7 min."""
    if not math.isfinite(s):
        return "-"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60)} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60)} min"


def read_cfg(folder: Path) -> dict[str, Any]:
    """The folder's cfg.json as a flat dict ({} when it has none or it does not parse)."""
    try:
        values = json.loads((Path(folder) / "cfg.json").read_text())
    except (OSError, ValueError):
        return {}
    return values if isinstance(values, dict) else {}


def write_atomic(path: Path, text: str) -> None:
    """Writes `text` to `path` through a temp file and a rename (never half a file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def run_totals(scalars: RunScalars) -> dict[str, float]:
    """Policy 0's totals from its scalars: `env_frames` (last summary), `seconds` (training time
    at it: from the first summary on, start-ups left out), `env_frames_per_sec` (the env frames
    after the first summary / seconds, as the run's log measures it; nan under 1 s), `final_return`,
    `best_return`, `best_return_frames` (max of `episode/return_mean` and its env frame),
    `final_eval_return`, `best_eval_return` (of `eval/return_mean`), each nan when absent."""
    nan = float("nan")
    per = scalars.get(0) or (next(iter(scalars.values())) if scalars else {})
    out = dict.fromkeys(
        (
            "env_frames",
            "seconds",
            "env_frames_per_sec",
            "final_return",
            "best_return",
            "best_return_frames",
            "final_eval_return",
            "best_eval_return",
        ),
        nan,
    )
    clock = per.get("perf/env_steps") or next((s for s in per.values() if len(s)), None)
    if clock is not None and len(clock):
        out["env_frames"] = float(clock.env_frames[-1])
        out["seconds"] = float(clock.seconds[-1])
        if out["seconds"] >= 1.0:
            out["env_frames_per_sec"] = (out["env_frames"] - float(clock.env_frames[0])) / out["seconds"]
    for tag, final, best in (
        ("episode/return_mean", "final_return", "best_return"),
        ("eval/return_mean", "final_eval_return", "best_eval_return"),
    ):
        s = per.get(tag)
        if s is not None and len(s):
            out[final] = s.last()
            i = int(np.argmax(s.values))
            out[best] = float(s.values[i])
            if tag == "episode/return_mean":
                out["best_return_frames"] = float(s.env_frames[i])
    return out


def code_revision_text(cfg: dict[str, Any], folder: Path) -> str:
    """The git revision line of the report, from cfg.json's `git_hash` / `git_repo_name`."""
    rev = cfg.get("git_hash")
    if not rev or rev == "unknown":
        return "not recorded (the code did not run from a git checkout)"
    dirty = (Path(folder) / GIT_DIFF_FILE).exists()
    changes = (
        f", with uncommitted changes: [{GIT_DIFF_FILE}]({GIT_DIFF_FILE})"
        if dirty
        else ", no uncommitted changes"
    )
    return f"`{rev}` ({cfg.get('git_repo_name', '?')}{changes})"


def latest_values_table(scalars: RunScalars) -> list[str]:
    """The markdown rows of every tag's latest value: | tag | policy | env frame | value |."""
    rows = ["| tag | policy | env frame | value |", "| --- | --- | --- | --- |"]
    for pid, per in sorted(scalars.items()):
        for tag in sorted(per):
            s: Series = per[tag]
            if len(s):
                rows.append(f"| `{tag}` | {pid} | {fmt(int(s.env_frames[-1]))} | {fmt(s.last())} |")
    return rows


def render_markdown(
    folder: Path,
    scalars: RunScalars,
    cfg: dict[str, Any],
    status: str,
    curves: str | None,
) -> str:
    """The text of report.md. `status`: "running" (a checkpoint) or the run's final status
    ("done", "interrupted", "failed"); `curves`: the figure's file name, or why there is none."""
    t = run_totals(scalars)
    name = cfg.get("experiment") or Path(folder).name
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    state = (
        "at a checkpoint; training goes on" if status == "running" else f"at the end of the run: **{status}**"
    )
    budget = cfg.get("train_for_env_steps")
    frames = fmt(int(t["env_frames"])) if math.isfinite(t["env_frames"]) else "-"
    if isinstance(budget, (int, float)) and budget < _NO_BUDGET and math.isfinite(t["env_frames"]):
        frames += f" of {fmt(int(budget))} ({100.0 * t['env_frames'] / max(1, budget):.1f}%)"
    fps_now = ""
    per0 = scalars.get(0, {})
    if "perf/env_frames_per_sec" in per0 and len(per0["perf/env_frames_per_sec"]):
        fps_now = f"; last 10 s: {fmt(per0['perf/env_frames_per_sec'].last())}"
    avg = cfg.get("stats_avg", 100)
    lines = [
        f"# {name}: training report",
        "",
        f"Written {when}, {state}. Values are policy 0's, from the TensorBoard summaries in "
        f"`summaries/` (x = env frames = env steps × frameskip); the full config is in `cfg.json`.",
        "",
        "| | |",
        "| --- | --- |",
        f"| env | `{cfg.get('env', '?')}` |",
        f"| algorithm | `{cfg.get('algo', '?')}` |",
        f"| env frames | {frames} |",
        f"| training time | {fmt_seconds(t['seconds'])} (wall clock from the first summary; start-ups and the time between a stop and its resume left out) |",
        f"| env frames / s | {fmt(t['env_frames_per_sec'])} (env frames after the first summary / training time){fps_now} |",
        f"| final return | {fmt(t['final_return'])} (mean of the last {avg} episodes) |",
        f"| best return | {fmt(t['best_return'])}"
        + (
            f" at env frame {fmt(int(t['best_return_frames']))} |"
            if math.isfinite(t["best_return_frames"])
            else " |"
        ),
    ]
    if math.isfinite(t["final_eval_return"]):
        lines.append(f"| final eval return | {fmt(t['final_eval_return'])} |")
        lines.append(f"| best eval return | {fmt(t['best_eval_return'])} |")
    lines.append(f"| code | {code_revision_text(cfg, folder)} |")
    lines += ["", "## Key flags", "", "| flag | value |", "| --- | --- |"]
    # (a budget left at its "no limit" default is not shown)
    lines += [
        f"| `{k}` | `{cfg[k]}` |"
        for k in KEY_FLAGS
        if k in cfg and not (k.startswith("train_for") and cfg[k] == _NO_BUDGET)
    ]
    lines += ["", "## Curves", ""]
    if curves == CURVES_FILE:
        lines.append(f"![learning curves]({CURVES_FILE})")
    else:
        lines.append(f"No figure: {curves}.")
    lines += ["", "## Latest values", "", *latest_values_table(scalars), ""]
    return "\n".join(lines)


def write_run_report(
    folder: Path | str, status: str = "running", reader: EventReader | None = None
) -> dict[str, Any]:
    """Writes `folder/report.md` and `folder/curves.png` (each atomically) from the folder's event
    files and cfg.json. Without matplotlib report.md says so (the pip command) and no figure is drawn.

    Args:
        folder: the experiment folder.
        status: "running" or the run's final status (see `render_markdown`).
        reader: an `EventReader` of `folder` kept between calls (reads only new events); None: a new one.

    Returns:
        {"seconds": time taken, "panels": panels drawn, "points": scalar points read}.
    """
    t0 = time.perf_counter()
    folder = Path(folder)
    scalars = (reader or EventReader(folder)).read()
    cfg = read_cfg(folder)
    panels = 0
    curves: str | None
    try:
        title = f"{cfg.get('experiment') or folder.name}: {cfg.get('algo', '')} on {cfg.get('env', '?')}"
        panels = plot_run(scalars, folder / CURVES_FILE, title)
        curves = CURVES_FILE if panels else "no TensorBoard summaries yet"
    except ConfigError as e:
        curves = f"matplotlib is not installed ({e.fix})"
    write_atomic(folder / REPORT_FILE, render_markdown(folder, scalars, cfg, status, curves))
    points = sum(len(s) for per in scalars.values() for s in per.values())
    return {"seconds": time.perf_counter() - t0, "panels": panels, "points": points}


class RunReport:
    """Writes a training run's report: in a background thread at checkpoints (`update`), and in
    the calling thread at the end (`finish`). A failure to write is logged, never raised: the
    report must not stop training."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.reader = EventReader(self.folder)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._warned = False
        #: seconds each write took (the run's log gives their mean at the end)
        self.durations: list[float] = []
        #: CPU seconds of the writing thread for each write (what `MAX_SHARE` bounds)
        self.cpu_durations: list[float] = []
        self.skipped = 0
        self._last_start = 0.0

    def update(self, status: str = "running") -> bool:
        """Starts writing the report in a background thread; False (skipped) while the previous
        write is still running, or when it started less than its duration / `MAX_SHARE` ago."""
        now = time.monotonic()
        busy = self._thread is not None and self._thread.is_alive()
        if busy or (self.cpu_durations and now - self._last_start < self.cpu_durations[-1] / MAX_SHARE):
            self.skipped += 1
            return False
        self._last_start = now
        self._thread = threading.Thread(target=self._write, args=(status,), name="surge-report", daemon=True)
        self._thread.start()
        return True

    def finish(self, status: str) -> None:
        """Waits for a write in progress, then writes the final report."""
        if self._thread is not None:
            self._thread.join()
        if self._write(status):
            d = self.durations
            log.info(
                "Report: %s and %s (%d written, %.2f s each on average, %.2f CPU-s%s).",
                self.folder / REPORT_FILE,
                CURVES_FILE,
                len(d),
                sum(d) / len(d),
                sum(self.cpu_durations) / len(self.cpu_durations),
                f"; {self.skipped} checkpoint(s) without one, to keep its cost under {MAX_SHARE:.0%} of a core"
                if self.skipped
                else "",
            )

    def _write(self, status: str) -> bool:
        with self._lock:
            cpu = time.thread_time()
            try:
                result = write_run_report(self.folder, status, self.reader)
            except Exception as e:  # the report never stops training
                if not self._warned:
                    self._warned = True
                    log.warning("Could not write the report in %s: %r (training goes on).", self.folder, e)
                return False
            self.durations.append(result["seconds"])
            self.cpu_durations.append(time.thread_time() - cpu)
            return True


def update_report(run: Any, kind: str) -> None:
    """TrainingRun's hook at a save of every policy (`_save_all`): starts writing the report in
    the background at a checkpoint or milestone (the final save is followed by `finish_report`).
    Nothing with `--write_report=False`, with `--no_writes` or on a data-parallel rank > 0."""
    if kind == "final" or not run.writes or not run.cfg.write_report:
        return
    if getattr(run, "_report", None) is None:
        run._report = RunReport(run.folder.root)
    for w in run.monitor.writers:  # the summaries so far reach the event files the report reads
        w.flush()
    run._report.update("running")


def finish_report(run: Any, status: str) -> None:
    """TrainingRun's hook when `run()` returns: writes the final report (status "done",
    "interrupted" or "failed") of a run that took env steps (a start that failed before its first
    has nothing to report: its folder was cleared for the next start)."""
    if not run.writes or not run.cfg.write_report or getattr(run, "first_frames", None) is None:
        return
    if getattr(run, "_report", None) is None:
        run._report = RunReport(run.folder.root)
    run._report.finish(status)
